"""Capacity from a sweep: latency curves against load, and the highest load that meets an SLO.

A sweep measures one configuration at several loads x (concurrency, or request rate). For each
latency percentile (e.g. TTFT P99) we fit one curve across *all* the sweep's points, not just
the two neighbours of a target. Three monotone families compete:

    power     latency = a + b (x / x_max)^k          a, b >= 0, k > 0
    queue     latency = a + b / (1 - x / C)^m        a, b >= 0, C > x_max, m in {0.5, 1, 2}
    loglog2   log latency = c0 + c1 log x + c2 log^2 x, rising over the whole sweep

a floor plus a rise (the power), a queue filling as load nears a capacity C (rate sweeps), and
a curved line in log-log space. Each is monotone non-decreasing (more load never makes a
replica faster, so a noisy dip is not believed). For fixed shape parameters (k; C and m) the
first two are linear in (a, b), solved in closed form with non-negativity; shapes are searched
on a grid; loglog2 is weighted least squares in log space. The family with the lowest weighted
chi-square of the *log* residuals plus 2 per parameter wins (a percentile's noise is relative).

Weights. Each point's noise is the standard error of log(percentile):
  - the percentile's own: the spread of the order statistic a sample quantile q over n requests
    is read from (exact, `order_statistic_z`; sqrt(q (1 - q) / n) / phi(z_q) for many requests)
    times sigma, the log-spread of the distribution (`log_spread`: from P50 and the percentile of
    the same run, each taken at the z where a sample percentile over n requests sits, or a
    default); a P99 over 10 requests is their maximum, with the maximum's spread;
  - run-to-run: the spread of repeated runs at the same load where they exist, with a floor
    (`RUN_TO_RUN`) where they do not.

Intervals. The highest load meeting a limit S is the inverse of the fitted curve at S. Its
interval inverts the curve at S * exp(-+ z * sigma_total), where sigma_total combines the noise a
new measurement at that load would carry and the fit's misfit, times a calibration factor
measured by leave-one-out on real published sweeps (`bench/planner.py`, docs/method.md); a
joint fit of tied objectives (below) has its own factor, measured the same way.

Several objectives. The lowest crossing binds. Objectives whose crossings the data cannot tell
apart from it are tied and fitted jointly (`joint_load`): the load at which all their curves
best match their limits, each weighted by its noise, with a profile interval. Every crossing of
a tie estimates the same load, so taking the lowest would sit low by the noise alone, and
averaging crossings would let a flat curve (whose crossing could be anywhere) pull.

Extrapolation. A load above the highest measured one is never given as a number: the result
says the limit holds up to the sweep's end and "measure beyond N first". A limit broken even at
the lowest measured load says so too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from scipy import stats

LEVEL = 0.80  # the interval's level everywhere the planner states one
RUN_TO_RUN = 0.06  # floor on a point's log noise: repeated runs of one setting differ by ~6%
DEFAULT_SIGMA = 0.5  # log-spread of a latency distribution when the run gives no P50 to judge it
CALIBRATION = 2.5  # sigma_total multiplier: leave-one-out on real sweeps (bench/planner.py)
# The joint fit's multiplier: tied objectives come from the same runs, so their errors are
# correlated and a profile interval that treats them as independent is too narrow by itself.
JOINT_CALIBRATION = 4.0

WITHIN = "within"  # the limit is crossed inside the measured range
BEYOND = "beyond"  # the limit holds at the highest measured load: measure further first
BELOW = "below"  # the limit is broken even at the lowest measured load

_K_GRID = tuple(
    math.exp(math.log(0.05) + i * (math.log(8.0) - math.log(0.05)) / 79) for i in range(80)
)


@dataclass(frozen=True)
class Point:
    """One measured percentile at one load."""

    x: float  # load: concurrency or request rate
    value_ms: float  # the percentile (e.g. TTFT P99) measured at x
    count: int | None = None  # requests the percentile rests on
    sigma: float | None = None  # log-spread of the run's distribution (log(P99/P50) / 2.326)
    repeats: tuple[float, ...] = ()  # the same percentile from repeated runs at x (ms)


@dataclass(frozen=True)
class Estimate:
    """A figure with its interval: `level` of the time the truth lies in [low, high]."""

    value: float
    low: float
    high: float
    level: float = LEVEL

    def to_dict(self, digits: int = 3) -> dict:
        """Rounded to `digits` significant digits; an unbounded end is None (JSON null)."""
        return {
            "value": _round(self.value, digits),
            "low": _round(self.low, digits),
            "high": _round(self.high, digits),
            "level": self.level,
        }

    def scaled(self, factor: float) -> Estimate:
        return Estimate(self.value * factor, self.low * factor, self.high * factor, self.level)


def _round(value: float, digits: int) -> float | None:
    if not math.isfinite(value):
        return None
    if value == 0:
        return value
    return round(value, max(0, digits - 1 - math.floor(math.log10(abs(value)))))


def percentile_log_se(quantile: float, count: int | None, sigma: float | None) -> float:
    """Standard error of log(percentile) from the percentile's own sampling: the spread of the
    order statistic a percentile over `count` requests is read from (`order_statistic_z`),
    times the distribution's log-spread `sigma` (log-normal). Exact for few requests, where the
    large-sample formula sqrt(q (1 - q) / n) / phi(z_q) is wrong by far: a P99 over 10 requests
    is their maximum, whose spread is 0.59 sigma, not 1.18 sigma; over one request, sigma, not
    3.7 sigma. Unknown count: one request's worth."""
    n = max(1, count or 1)
    q = min(max(quantile, 0.5), 0.999)
    spread = sigma if sigma and sigma > 0 else DEFAULT_SIGMA
    return order_statistic_z(q, n)[1] * spread


@lru_cache(maxsize=4096)
def order_statistic_z(quantile: float, count: int) -> tuple[float, float]:
    """Mean and standard deviation of the sample `quantile` of `count` standard-normal values:
    the order statistic the usual linear rule (numpy's) lands nearest to, U_(k) ~ Beta(k, n+1-k)
    mapped through the normal's quantile function, by quadrature. A P99 over 10 requests has mean
    z 1.54, not 2.33: it is their maximum."""
    n = max(1, int(count))
    k = min(n, max(1, round((n - 1) * quantile) + 1))
    grid = (np.arange(_ORDER_GRID) + 0.5) / _ORDER_GRID
    z = stats.norm.ppf(stats.beta.ppf(grid, k, n + 1 - k))
    return float(np.mean(z)), float(np.std(z))


_ORDER_GRID = 400


def log_spread(
    p50_ms: float | None, value_ms: float, quantile: float, count: int | None
) -> float | None:
    """The log-spread sigma of a run's latency distribution from its P50 and another percentile
    of the same run: log(P_q / P50) over the z those two sample percentiles sit at on average
    for `count` requests (a P99 over 10 requests sits at 1.54, not 2.33, so dividing by 2.33
    would take the spread for two thirds of what it is). None when it cannot be told."""
    if not p50_ms or p50_ms <= 0 or value_ms <= p50_ms or quantile <= 0.5:
        return None
    n = max(1, count or 1000)
    gap = order_statistic_z(quantile, n)[0] - order_statistic_z(0.5, n)[0]
    if gap <= 0.05:
        return None
    return math.log(value_ms / p50_ms) / gap


def point_log_se(point: Point, quantile: float) -> float:
    """A point's total log noise: its percentile's sampling error, run-to-run spread or floor."""
    own = percentile_log_se(quantile, point.count, point.sigma)
    runs = RUN_TO_RUN
    values = [point.value_ms, *point.repeats]
    if len(values) >= 2 and all(v > 0 for v in values):
        logs = [math.log(v) for v in values]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
        runs = max(RUN_TO_RUN, sd)
    return math.sqrt(own**2 + runs**2)


POWER = "power"  # a + b (x / x_max)^k: concave to convex, no pole
QUEUE = "queue"  # a + b / (1 - x / C)^m: a queue filling as load nears a capacity C
LOGLOG2 = "loglog2"  # log latency quadratic in log load, checked monotone over the sweep
# A family's extra parameters, charged when families compete (Akaike: 2 per parameter).
_PARAMETERS = {POWER: 3, QUEUE: 4, LOGLOG2: 3}
_QUEUE_C = (1.02, 1.05, 1.1, 1.2, 1.35, 1.5, 1.75, 2, 2.5, 3, 4, 6, 10, 20)
_QUEUE_M = (0.5, 1.0, 2.0)


@dataclass(frozen=True)
class Curve:
    """One percentile of one sweep against load, fitted to `points` (module docstring)."""

    family: str  # POWER | QUEUE | LOGLOG2
    params: tuple[float, ...]  # POWER (a, b, k); QUEUE (a, b, C, m); LOGLOG2 (c0, c1, c2)
    x_scale: float
    quantile: float
    points: tuple[Point, ...]
    log_se: tuple[float, ...]  # each point's noise, as used in the fit
    misfit: float  # log residual the noise does not explain (0 when the fit is within noise)

    @property
    def x_min(self) -> float:
        return self.points[0].x

    @property
    def x_max(self) -> float:
        return self.points[-1].x

    @property
    def floor(self) -> float:
        """The latency the curve tends to at no load (its lowest)."""
        if self.family == LOGLOG2:
            return 0.0
        return self.params[0]

    def predict(self, x: float) -> float:
        if self.family == POWER:
            a, b, k = self.params
            return a + b * (x / self.x_scale) ** k
        if self.family == QUEUE:
            a, b, c, m = self.params
            return math.inf if x >= c else a + b / (1 - x / c) ** m
        return math.exp(self._log_loglog2(math.log(x)))

    def _log_loglog2(self, lx: float) -> float:
        """Inside the sweep the quadratic; outside it, its tangent at the nearer end (so the
        curve stays monotone and bounds can be read a little past the ends)."""
        c0, c1, c2 = self.params
        lo, hi = math.log(self.x_min), math.log(self.x_max)
        end = min(max(lx, lo), hi)
        value = c0 + c1 * end + c2 * end * end
        return value + (c1 + 2 * c2 * end) * (lx - end)

    def noise_at(self, x: float) -> float:
        """Log noise a new measurement at x would carry: the neighbours' noise, interpolated in
        log x, combined with the fit's misfit."""
        xs = [p.x for p in self.points]
        if x <= xs[0]:
            own = self.log_se[0]
        elif x >= xs[-1]:
            own = self.log_se[-1]
        else:
            j = next(i for i in range(1, len(xs)) if xs[i] >= x)
            t = (math.log(x) - math.log(xs[j - 1])) / (math.log(xs[j]) - math.log(xs[j - 1]))
            own = self.log_se[j - 1] + t * (self.log_se[j] - self.log_se[j - 1])
        return math.sqrt(own**2 + self.misfit**2)

    def inverse(self, limit_ms: float) -> float:
        """The load at which the curve reaches `limit_ms`: 0 below the floor, inf when flat."""
        if self.family == POWER:
            a, b, k = self.params
            if limit_ms <= a:
                return 0.0
            if b <= 0:
                return math.inf
            return self.x_scale * ((limit_ms - a) / b) ** (1 / k)
        if self.family == QUEUE:
            a, b, c, m = self.params
            if limit_ms <= a:
                return 0.0
            if b <= 0:
                return math.inf
            return max(0.0, c * (1 - (b / (limit_ms - a)) ** (1 / m)))
        return self._inverse_loglog2(math.log(limit_ms))

    def _inverse_loglog2(self, target: float) -> float:
        _, c1, c2 = self.params
        lo, hi = math.log(self.x_min), math.log(self.x_max)
        at_lo, at_hi = self._log_loglog2(lo), self._log_loglog2(hi)
        slope_lo, slope_hi = c1 + 2 * c2 * lo, c1 + 2 * c2 * hi
        if target <= at_lo:
            return math.exp(lo - (at_lo - target) / slope_lo) if slope_lo > 0 else 0.0
        if target >= at_hi:
            if slope_hi <= 0 or (target - at_hi) / slope_hi > 700:  # past exp's range: flat
                return math.inf
            return math.exp(hi + (target - at_hi) / slope_hi)
        left, right = lo, hi  # monotone inside: bisection
        for _ in range(60):
            mid = (left + right) / 2
            if self._log_loglog2(mid) < target:
                left = mid
            else:
                right = mid
        return math.exp((left + right) / 2)


def _solve_ab(u: Sequence[float], y: Sequence[float], w: Sequence[float]) -> tuple[float, float]:
    """Weighted least squares of y ~ a + b u with a, b >= 0 (closed form on the boundary)."""
    sw = sum(w)
    su = sum(wi * ui for wi, ui in zip(w, u, strict=True))
    sy = sum(wi * yi for wi, yi in zip(w, y, strict=True))
    suu = sum(wi * ui * ui for wi, ui in zip(w, u, strict=True))
    suy = sum(wi * ui * yi for wi, ui, yi in zip(w, u, y, strict=True))
    det = sw * suu - su * su
    if det > 1e-12 * sw * suu:
        a = (suu * sy - su * suy) / det
        b = (sw * suy - su * sy) / det
        if a >= 0 and b >= 0:
            return a, b
    # On the boundary: the better of a = 0 and b = 0.
    b0 = max(0.0, suy / suu) if suu > 0 else 0.0
    a0 = max(0.0, sy / sw)
    cost_a0 = sum(wi * (b0 * ui - yi) ** 2 for wi, ui, yi in zip(w, u, y, strict=True))
    cost_b0 = sum(wi * (a0 - yi) ** 2 for wi, yi in zip(w, y, strict=True))
    return (0.0, b0) if cost_a0 < cost_b0 else (a0, 0.0)


def _validate(points: Sequence[Point]) -> None:
    for i, p in enumerate(points):
        for name in ("x", "value_ms"):
            value = getattr(p, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"points[{i}].{name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"points[{i}].{name} must be positive and finite, got {value!r}")


def _chi2(curve_log: Sequence[float], ys: Sequence[float], se: Sequence[float]) -> float:
    return sum(((f - math.log(y)) / s) ** 2 for f, y, s in zip(curve_log, ys, se, strict=True))


def _fit_linear_family(xs, ys, se, basis) -> tuple[float, float, float, tuple] | None:
    """Best (chi2, a, b, shape) of a + b * basis(x, shape) over the shapes `basis` offers."""
    w = [1 / (s * y) ** 2 for s, y in zip(se, ys, strict=True)]  # relative: r ms at y is r/y
    best = None
    for shape, u in basis:
        a, b = _solve_ab(u, ys, w)
        fitted = [a + b * ui for ui in u]
        if min(fitted) <= 0:
            continue
        cost = _chi2([math.log(f) for f in fitted], ys, se)
        if best is None or cost < best[0]:
            best = (cost, a, b, shape)
    return best


def _fit_loglog2(xs, ys, se) -> tuple[float, tuple[float, float, float]] | None:
    """Weighted least squares of log y on (1, log x, log^2 x); None when not monotone."""
    if len(xs) < 4:
        return None
    lx = np.log(np.asarray(xs, dtype=float))
    ly = np.log(np.asarray(ys, dtype=float))
    w = 1 / np.asarray(se, dtype=float)
    design = np.vstack([np.ones_like(lx), lx, lx * lx]).T
    coef, *_ = np.linalg.lstsq(design * w[:, None], ly * w, rcond=None)
    c0, c1, c2 = (float(c) for c in coef)
    if c1 + 2 * c2 * lx[0] < 0 or c1 + 2 * c2 * lx[-1] < 0:  # slope is linear in log x
        return None
    return float(np.sum(((design @ coef) - ly) ** 2 * w * w)), (c0, c1, c2)


def fit_curve(points: Sequence[Point], quantile: float) -> Curve:
    """The monotone curve through a sweep's points for one percentile (see module docstring).

    Points at the same load are merged (the newest value stands, the others are repeats).
    Three families compete (power, queue, quadratic in log-log); the lowest weighted chi-square
    plus 2 per parameter wins. Needs two loads or more.
    """
    _validate(points)
    by_x: dict[float, Point] = {}
    for p in points:
        if p.x in by_x:
            old = by_x[p.x]
            p = Point(p.x, p.value_ms, p.count, p.sigma, (*old.repeats, old.value_ms, *p.repeats))
        by_x[p.x] = p
    pts = tuple(by_x[x] for x in sorted(by_x))
    if len(pts) < 2:
        raise ValueError("a curve needs points at two loads or more")
    se = tuple(point_log_se(p, quantile) for p in pts)
    xs = [p.x for p in pts]
    ys = [_center(p) for p in pts]
    x_scale = xs[-1]
    candidates: list[tuple[float, str, tuple]] = []
    power = _fit_linear_family(
        xs, ys, se, (((k,), [(x / x_scale) ** k for x in xs]) for k in _K_GRID)
    )
    if power is not None:
        candidates.append(
            (power[0] + 2 * _PARAMETERS[POWER], POWER, (power[1], power[2], *power[3]))
        )
    if len(pts) >= 4:
        queue = _fit_linear_family(
            xs,
            ys,
            se,
            (
                ((x_scale * c, m), [1 / (1 - x / (x_scale * c)) ** m for x in xs])
                for c in _QUEUE_C
                for m in _QUEUE_M
            ),
        )
        if queue is not None:
            candidates.append(
                (queue[0] + 2 * _PARAMETERS[QUEUE], QUEUE, (queue[1], queue[2], *queue[3]))
            )
        loglog2 = _fit_loglog2(xs, ys, se)
        if loglog2 is not None:
            candidates.append((loglog2[0] + 2 * _PARAMETERS[LOGLOG2], LOGLOG2, loglog2[1]))
    if not candidates:  # every power fit went non-positive: cannot happen with a, b >= 0
        raise ValueError("no monotone curve fits these points")
    _, family, params = min(candidates, key=lambda c: c[0])
    curve = Curve(family, params, x_scale, quantile, pts, se, 0.0)
    residuals = [math.log(curve.predict(x)) - math.log(y) for x, y in zip(xs, ys, strict=True)]
    excess = [r * r - s * s for r, s in zip(residuals, se, strict=True)]
    dof = max(1, len(pts) - _PARAMETERS[family] + 1)
    misfit = math.sqrt(max(0.0, sum(excess) / dof))
    return Curve(family, params, x_scale, quantile, pts, se, misfit)


def _center(p: Point) -> float:
    """The value a point stands for: the geometric mean of its runs."""
    values = [p.value_ms, *p.repeats]
    return math.exp(sum(math.log(v) for v in values) / len(values))


@dataclass(frozen=True)
class Crossing:
    """Where one objective's curve reaches its limit."""

    name: str  # e.g. "ttft_p99_ms"
    limit_ms: float
    status: str  # WITHIN | BEYOND | BELOW
    load: Estimate | None  # None when BELOW


def crossing(
    curve: Curve,
    limit_ms: float,
    *,
    name: str = "",
    level: float = LEVEL,
    calibration: float = CALIBRATION,
) -> Crossing:
    """The highest load at which `curve` stays within `limit_ms`, with its interval.

    Never past the sweep: a value above the highest measured load is reported as that load with
    status BEYOND (the true capacity is higher, by an amount the sweep cannot tell).
    """
    if not (limit_ms > 0 and math.isfinite(limit_ms)):
        raise ValueError(f"limit for {name or 'the objective'} must be a positive number")
    z = NormalDist().inv_cdf(0.5 + level / 2)
    value = curve.inverse(limit_ms)
    lo_x, hi_x = curve.x_min, curve.x_max
    if value < lo_x:
        # Broken at the lowest load by the fit; the measured point may still say otherwise.
        if _center(curve.points[0]) > limit_ms:
            return Crossing(name, limit_ms, BELOW, None)
        value = lo_x
    sigma = calibration * curve.noise_at(min(max(value, lo_x), hi_x))
    low = curve.inverse(limit_ms * math.exp(-z * sigma))
    high = curve.inverse(limit_ms * math.exp(z * sigma))
    if value >= hi_x:
        return Crossing(
            name, limit_ms, BEYOND, Estimate(hi_x, min(max(low, lo_x), hi_x), hi_x, level)
        )
    low = min(max(low, 0.0), value)
    high = max(min(high, hi_x), value)
    return Crossing(name, limit_ms, WITHIN, Estimate(value, low, high, level))


@dataclass(frozen=True)
class MaxLoad:
    """The highest load meeting every objective, and the one that binds first."""

    status: str  # WITHIN | BEYOND | BELOW
    load: Estimate | None
    limited_by: str | None  # the binding objective's name; None when none binds in the sweep
    crossings: tuple[Crossing, ...] = field(default_factory=tuple)
    x_max: float | None = None  # the sweep's highest measured load
    tied_with: tuple[str, ...] = ()  # objectives binding at a load the data cannot tell apart

    @property
    def message(self) -> str:
        if self.status == BELOW:
            return (
                f"{self.limited_by} is broken even at the lowest measured load: "
                "measure lower loads (or relax the objective) first"
            )
        if self.status == BEYOND:
            return (
                f"every objective holds at the highest measured load {self.x_max:g}: "
                f"capacity is at least that; measure beyond {self.x_max:g} first"
            )
        if self.tied_with:
            return f"limited by {self.limited_by} (tied with {', '.join(self.tied_with)})"
        return f"limited by {self.limited_by}"


TIE_Z = 1.0  # crossings closer than this many combined standard deviations are tied


def _log_sd(load: Estimate) -> float:
    """The spread of a crossing in log load, read back from its interval."""
    z = NormalDist().inv_cdf(0.5 + load.level / 2)
    low, high = max(load.low, 1e-12), max(load.high, 1e-12)
    return max((math.log(high) - math.log(low)) / (2 * z), 0.01)


def max_load(
    curves: Mapping[str, tuple[Curve, float]],
    *,
    level: float = LEVEL,
    calibration: float = CALIBRATION,
    joint_calibration: float = JOINT_CALIBRATION,
) -> MaxLoad:
    """The highest load at which every objective (name -> (curve, limit in ms)) holds.

    The binding objective is the one whose crossing is lowest. Objectives whose crossings the
    data cannot tell apart from the lowest (within `TIE_Z` combined standard deviations) are
    tied: each estimates the same load, so the value is their joint fit (`joint_load`) rather
    than the lowest of several noisy estimates (which would sit low by the noise alone). The
    interval is the joint fit's where it closes it, and otherwise, like the bounds of the
    objectives outside the tie, the lowest of the single crossings' bounds.
    """
    if not curves:
        raise ValueError("no objective to plan for")
    found = [
        crossing(c, limit, name=name, level=level, calibration=calibration)
        for name, (c, limit) in curves.items()
    ]
    x_max = min(c.x_max for c, _ in curves.values())
    below = [c for c in found if c.status == BELOW]
    if below:
        return MaxLoad(BELOW, None, below[0].name, tuple(found), x_max)
    binding = min(found, key=lambda c: c.load.value)
    low = min(c.load.low for c in found)
    high = min(c.load.high for c in found)
    if all(c.status == BEYOND for c in found):
        return MaxLoad(
            BEYOND,
            Estimate(binding.load.value, low, binding.load.value, level),
            None,
            tuple(found),
            x_max,
        )
    lowest, spread = math.log(binding.load.value), _log_sd(binding.load)
    tied = [
        c
        for c in found
        if c.status == WITHIN
        and math.log(c.load.value) - lowest <= TIE_Z * math.hypot(_log_sd(c.load), spread)
    ] or [binding]
    value = binding.load.value
    if len(tied) > 1:
        joint = joint_load(
            [curves[c.name] for c in tied], level=level, calibration=joint_calibration
        )
        if joint is not None:
            value = joint.value
            # Bounds the joint fit closes replace the tied crossings' own (where one objective
            # alone would bind); objectives outside the tie still bound it.
            others = [c for c in found if c not in tied]
            if not math.isnan(joint.low):
                low = min([joint.low, *(c.load.low for c in others)])
            if not math.isnan(joint.high):
                high = min([joint.high, *(c.load.high for c in others)])
    return MaxLoad(
        WITHIN,
        Estimate(value, min(low, value), max(high, value), level),
        binding.name,
        tuple(found),
        x_max,
        tuple(c.name for c in tied if c is not binding),
    )


def joint_load(
    objectives: Sequence[tuple[Curve, float]],
    *,
    level: float = LEVEL,
    calibration: float = JOINT_CALIBRATION,
    steps: int = 240,
) -> Estimate | None:
    """The load whose fitted percentiles best match several limits at once, with its interval:
    the minimum over the measured range of cost(x) = sum(((log f_k(x) - log limit_k) / s_k)^2),
    s_k the curve's noise where it alone reaches its limit, and the loads where
    cost / calibration^2 rises z^2 above its minimum.

    For objectives the data cannot tell apart this is the maximum-likelihood load: each curve
    informs it in proportion to its steepness over its noise, so a flat curve (whose own
    crossing could lie anywhere) barely moves it, where averaging crossings would let it pull.
    An end of the interval the measured range does not close is None (the caller keeps the
    single crossings' bound there). None when the objectives share no measured range."""
    lo = max(c.x_min for c, _ in objectives)
    hi = min(c.x_max for c, _ in objectives)
    if not lo < hi:
        return None
    # Each objective's noise is read once, where it alone would bind: noise that varied with x
    # would make the sum smallest wherever the points are worst (a P99 over one request).
    noise = [c.noise_at(min(max(c.inverse(limit), lo), hi)) for c, limit in objectives]

    def cost(lx: float) -> float:
        x = math.exp(lx)
        total = 0.0
        for (curve, limit), s in zip(objectives, noise, strict=True):
            f = curve.predict(x)
            if not (math.isfinite(f) and f > 0):
                return math.inf
            total += ((math.log(f) - math.log(limit)) / s) ** 2
        return total

    grid = [math.log(lo) + i * (math.log(hi) - math.log(lo)) / steps for i in range(steps + 1)]
    costs = [cost(g) for g in grid]
    i = min(range(len(grid)), key=costs.__getitem__)
    left, right = grid[max(i - 1, 0)], grid[min(i + 1, steps)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(40):  # golden section inside the best grid cell's neighbours
        a, b = right - ratio * (right - left), left + ratio * (right - left)
        if cost(a) <= cost(b):
            right = b
        else:
            left = a
    best = (left + right) / 2
    z = NormalDist().inv_cdf(0.5 + level / 2)
    threshold = min(cost(best), costs[i]) + (z * calibration) ** 2
    below = [g for g, c in zip(grid[: i + 1], costs[: i + 1], strict=True) if c > threshold]
    above = [g for g, c in zip(grid[i:], costs[i:], strict=True) if c > threshold]
    low = math.exp(below[-1]) if below else math.nan
    high = math.exp(above[0]) if above else math.nan
    value = math.exp(best)
    return Estimate(value, min(low, value), max(high, value), level)


def loglog_between(x0: float, y0: float, x1: float, y1: float, limit: float) -> float:
    """Plain log-log interpolation between two neighbouring points (the reference method):
    the load where the straight line through them in log-log space reaches `limit`, clamped
    to [x0, x1]."""
    if y1 <= y0:  # flat or falling: the line says nothing; the neighbours' midpoint
        return x1 if limit >= y1 else x0 if limit <= y0 else math.sqrt(x0 * x1)
    t = (math.log(limit) - math.log(y0)) / (math.log(y1) - math.log(y0))
    t = min(max(t, 0.0), 1.0)
    return math.exp(math.log(x0) + t * (math.log(x1) - math.log(x0)))


def monotone_interpolate(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """Interpolate a quantity that should not fall with load (throughput below saturation)
    in log-log space, after pooling adjacent violators; clamped to the measured range."""
    pairs = sorted(zip(xs, ys, strict=True))
    blocks: list[list[float]] = []  # [sum of log y, count]
    for _, y in pairs:
        blocks.append([math.log(y), 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += n
    logs = [b[0] / b[1] for b in blocks for _ in range(int(b[1]))]
    lx = [math.log(p[0]) for p in pairs]
    target = math.log(min(max(x, pairs[0][0]), pairs[-1][0]))
    for i in range(1, len(lx)):
        if lx[i] >= target:
            t = 0.0 if lx[i] == lx[i - 1] else (target - lx[i - 1]) / (lx[i] - lx[i - 1])
            return math.exp(logs[i - 1] + t * (logs[i] - logs[i - 1]))
    return math.exp(logs[-1])


def rate_at(xs: Sequence[float], rates: Sequence[float], load: Estimate) -> Estimate:
    """A load setting (concurrency, or offered request rate) as the request rate a replica
    measured at it: the measured rates interpolated monotonically (`monotone_interpolate`) at the
    estimate and at its interval's ends. The interval also carries the rates' own noise (their
    scatter about that monotone curve, at least `RUN_TO_RUN`): where throughput is flat the
    setting's interval maps onto one rate, which a new measurement misses by that noise alone.
    Needs rates at two settings or more."""
    if len(xs) < 2:
        raise ValueError("a rate needs measured rates at two load settings or more")

    def at(x: float) -> float:
        return monotone_interpolate(xs, rates, x) if x > 0 else 0.0

    scatter = [math.log(r / at(x)) for x, r in zip(xs, rates, strict=True) if r > 0]
    dof = max(1, len(scatter) - 1)
    noise = max(RUN_TO_RUN, math.sqrt(sum(s * s for s in scatter) / dof))
    z = NormalDist().inv_cdf(0.5 + load.level / 2)
    value = at(load.value)
    low = at(load.low) * math.exp(-z * noise)
    high = at(load.high) * math.exp(z * noise)
    return Estimate(value, min(low, value), max(high, value), load.level)


def percentile_z(quantile: float) -> float:
    """z of a quantile of the standard normal: log(P_q / P50) = z * sigma for a log-normal."""
    return NormalDist().inv_cdf(quantile)
