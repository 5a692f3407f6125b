"""One percentile of one sweep against load: the monotone families that compete and the fit
(the method is in `analysis.capacity`'s docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from analysis.capacity import pchip
from analysis.capacity.noise import point_log_se
from analysis.capacity.points import Point

POWER = "power"  # a + b (x / x_max)^k: concave to convex, no pole
QUEUE = "queue"  # a + b / (1 - x / C)^m: a queue filling as load nears a capacity C
LOGLOG2 = "loglog2"  # log latency quadratic in log load, checked monotone over the sweep
PCHIP = "pchip"  # the points themselves, pooled monotone, joined by a monotone cubic in log-log
# A family's extra parameters, charged when families compete (Akaike: 2 per parameter).
_PARAMETERS = {POWER: 3, QUEUE: 4, LOGLOG2: 3}
_QUEUE_C = (1.02, 1.05, 1.1, 1.2, 1.35, 1.5, 1.75, 2, 2.5, 3, 4, 6, 10, 20)
_QUEUE_M = (0.5, 1.0, 2.0)
# Mean chi-square of the family's left-out predictions above which the points themselves
# (PCHIP) may be read instead: 2, twice what noise alone gives.
FAMILY_MISS = 2.0


_K_GRID = tuple(
    math.exp(math.log(0.05) + i * (math.log(8.0) - math.log(0.05)) / 79) for i in range(80)
)


@dataclass(frozen=True)
class Curve:
    """One percentile of one sweep against load, fitted to `points` (see `analysis.capacity`)."""

    family: str  # POWER | QUEUE | LOGLOG2 | PCHIP
    # POWER (a, b, k); QUEUE (a, b, C, m); LOGLOG2 (c0, c1, c2); PCHIP the knots' log x, then
    # their log latency, then their slopes
    params: tuple[float, ...]
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
        if self.family == PCHIP:
            _, ly, m = self._knots()
            return 0.0 if m[0] > 0 else math.exp(ly[0])
        return self.params[0]

    def _knots(self) -> tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]:
        n = len(self.params) // 3
        return self.params[:n], self.params[n : 2 * n], self.params[2 * n :]

    def predict(self, x: float) -> float:
        if self.family == POWER:
            a, b, k = self.params
            return a + b * (x / self.x_scale) ** k
        if self.family == QUEUE:
            a, b, c, m = self.params
            return math.inf if x >= c else a + b / (1 - x / c) ** m
        if self.family == PCHIP:
            return math.exp(min(pchip.evaluate(*self._knots(), math.log(x)), 700.0))
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
        if self.family == PCHIP:
            lx = pchip.invert(*self._knots(), math.log(limit_ms))
            return 0.0 if lx == -math.inf else math.inf if lx > 700 else math.exp(lx)
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


def _validate(points: Sequence[Point]) -> None:
    for i, p in enumerate(points):
        for name in ("x", "value_ms"):
            value = getattr(p, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"points[{i}].{name} must be a number, got {value!r}")
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"points[{i}].{name} must be positive and finite, got {value!r}")


def _fit_linear_family(xs, ys, se, basis) -> tuple[float, float, float, tuple] | None:
    """Best (chi2, a, b, shape) of a + b * basis(x, shape) over the shapes `basis` offers.

    Each shape is a weighted least squares of y ~ a + b u with a, b >= 0, in closed form (on the
    boundary, the better of a = 0 and b = 0), all shapes at once: the planner fits some hundred
    shapes per curve, and refits each curve once per left-out point."""
    shapes, rows = [], []
    for shape, u in basis:
        shapes.append(shape)
        rows.append(u)
    if not shapes:
        return None
    u = np.asarray(rows, dtype=float)  # shapes x points
    y = np.asarray(ys, dtype=float)
    s = np.asarray(se, dtype=float)
    w = 1 / (s * y) ** 2  # relative: r ms at y is r/y
    sw, sy = w.sum(), (w * y).sum()
    su, suu, suy = (u * w).sum(axis=1), (u * u * w).sum(axis=1), (u * w * y).sum(axis=1)
    det = sw * suu - su * su
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (suu * sy - su * suy) / det
        b = (sw * suy - su * sy) / det
        interior = (det > 1e-12 * sw * suu) & (a >= 0) & (b >= 0)
        b0 = np.where(suu > 0, np.maximum(0.0, suy / suu), 0.0)
    a0 = max(0.0, sy / sw)
    cost_a0 = (w * (b0[:, None] * u - y) ** 2).sum(axis=1)
    cost_b0 = (w * (a0 - y) ** 2).sum()
    on_b = cost_a0 < cost_b0
    a = np.where(interior, a, np.where(on_b, 0.0, a0))
    b = np.where(interior, b, np.where(on_b, b0, 0.0))
    fitted = a[:, None] + b[:, None] * u
    positive = fitted.min(axis=1) > 0
    if not positive.any():
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        cost = (((np.log(fitted) - np.log(y)) / s) ** 2).sum(axis=1)
    cost = np.where(positive, cost, np.inf)
    best = int(np.argmin(cost))  # the first of equals, as the shapes come
    return float(cost[best]), float(a[best]), float(b[best]), shapes[best]


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
    """The monotone curve through a sweep's points for one percentile (see `analysis.capacity`).

    Points at the same load are merged (the newest value stands, the others are repeats).
    Three families compete (power, queue, quadratic in log-log); the lowest weighted chi-square
    plus 2 per parameter wins. With four loads or more, the winner then meets the points
    themselves (`PCHIP`: pooled monotone, joined by a monotone cubic in log-log): each interior
    point is left out in turn and predicted by both, refitted on the others; where the family
    misses them beyond their noise (mean chi-square above `FAMILY_MISS`), the smaller
    noise-weighted error of those predictions stays (a curve no family follows, flat and then
    a knee, is better read between its neighbours). Needs two loads or more.
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
    curve = _fit_family(pts, se, quantile)
    if len(pts) < 3:
        return curve
    fitted, family_left_out, local = 0.0, [], []
    for j in range(1, len(pts) - 1):
        rest, rest_se = pts[:j] + pts[j + 1 :], se[:j] + se[j + 1 :]
        target = math.log(_center(pts[j]))
        miss = math.log(_fit_family(rest, rest_se, quantile).predict(pts[j].x)) - target
        fitted += (miss / se[j]) ** 2
        family_left_out.append((miss, se[j]))
        if len(pts) >= 4:
            residual = math.log(_fit_pchip(rest, rest_se, quantile, 0.0).predict(pts[j].x)) - target
            local.append((residual, se[j]))
    # How far the family misses a point it was not fitted to is how far a crossing read between
    # points can be off; the residuals of a curve fitted through every point understate it
    # (three points and three parameters leave none at all).
    curve = replace(curve, misfit=max(curve.misfit, _beyond_noise(family_left_out)))
    if len(pts) < 4:
        return curve
    # The family stays unless it misses the left-out points beyond their noise (a smooth sweep
    # is better read by its family: the interpolant carries every point's noise) and the
    # interpolant misses them less.
    if fitted <= FAMILY_MISS * len(local) or sum((r / s) ** 2 for r, s in local) >= fitted:
        return curve
    return _fit_pchip(pts, se, quantile, _beyond_noise(local))


def _beyond_noise(residuals: Sequence[tuple[float, float]]) -> float:
    """The log error of left-out predictions that their points' own noise does not explain."""
    return math.sqrt(max(0.0, sum(r * r - s * s for r, s in residuals) / len(residuals)))


def _fit_pchip(
    pts: tuple[Point, ...], se: tuple[float, ...], quantile: float, misfit: float
) -> Curve:
    lx = [math.log(p.x) for p in pts]
    ly = pchip.isotonic([math.log(_center(p)) for p in pts], [1 / (s * s) for s in se])
    slopes = pchip.slopes(lx, ly)
    return Curve(PCHIP, (*lx, *ly, *slopes), pts[-1].x, quantile, pts, se, misfit)


def _fit_family(pts: tuple[Point, ...], se: tuple[float, ...], quantile: float) -> Curve:
    """The best of the three families (lowest weighted chi-square plus 2 per parameter)."""
    xs = [p.x for p in pts]
    ys = [_center(p) for p in pts]
    x_scale = xs[-1]
    # Through two rising points many power curves with a floor fit exactly, and whichever k of
    # the grid came first would set the shape; the straight line in log-log (no floor) assumes
    # none.
    if len(pts) == 2 and ys[1] > ys[0]:
        k = math.log(ys[1] / ys[0]) / math.log(xs[1] / xs[0])
        return Curve(POWER, (0.0, ys[1], k), x_scale, quantile, pts, se, 0.0)
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
