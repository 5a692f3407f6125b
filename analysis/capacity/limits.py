"""The highest load within a limit: one objective's crossing, every objective's (the binding
one first, ties fitted jointly), and the joint fit itself."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from analysis.capacity.curves import Curve, _center
from analysis.capacity.points import (
    BELOW,
    BEYOND,
    CALIBRATION,
    JOINT_CALIBRATION,
    LEVEL,
    WITHIN,
    Estimate,
)


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
    sigma = calibration * curve.noise_at(min(max(value, lo_x), hi_x))
    if value < lo_x:
        # Broken at the lowest load by the fit; the measured point may still say otherwise,
        # and so may its noise: a limit within the lowest point's own interval is not broken
        # there as far as the data can tell (a flat curve's crossing could lie anywhere).
        if math.log(_center(curve.points[0]) / limit_ms) > z * sigma:
            return Crossing(name, limit_ms, BELOW, None)
        value = lo_x
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
