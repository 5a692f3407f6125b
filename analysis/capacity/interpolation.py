"""Between measured points: the reference log-log interpolation, a monotone interpolation of
throughput, and a load setting mapped to the request rate it served."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from analysis.capacity.points import RUN_TO_RUN, Estimate


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
