"""A monotone interpolant of one percentile against load, for curves no family fits: the
points pooled where they fall (weighted isotonic regression in log latency), then a monotone
cubic (PCHIP, Fritsch-Carlson) through them in log-log space; past the ends, the end tangent."""

from __future__ import annotations

import math
from collections.abc import Sequence


def isotonic(values: Sequence[float], weights: Sequence[float]) -> list[float]:
    """The non-decreasing sequence nearest `values` in weighted least squares (pooled adjacent
    violators): a dip is noise, not a replica getting faster under load."""
    blocks: list[list[float]] = []  # [weighted sum, weight, count]
    for v, w in zip(values, weights, strict=True):
        blocks.append([v * w, w, 1])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] > blocks[-1][0] / blocks[-1][1]:
            s, ww, n = blocks.pop()
            blocks[-1][0] += s
            blocks[-1][1] += ww
            blocks[-1][2] += n
    return [b[0] / b[1] for b in blocks for _ in range(int(b[2]))]


def slopes(lx: Sequence[float], ly: Sequence[float]) -> list[float]:
    """Fritsch-Carlson knot slopes: zero where the data is flat on either side, a weighted
    harmonic mean of the secants otherwise, so the cubic never overshoots (stays monotone)."""
    n = len(lx)
    h = [lx[i + 1] - lx[i] for i in range(n - 1)]
    d = [(ly[i + 1] - ly[i]) / h[i] for i in range(n - 1)]
    if n == 2:
        return [d[0], d[0]]
    m = [0.0] * n
    for i in range(1, n - 1):
        if d[i - 1] > 0 and d[i] > 0:
            w1, w2 = 2 * h[i] + h[i - 1], h[i] + 2 * h[i - 1]
            m[i] = (w1 + w2) / (w1 / d[i - 1] + w2 / d[i])
    m[0] = _end_slope(h[0], h[1], d[0], d[1])
    m[-1] = _end_slope(h[-1], h[-2], d[-1], d[-2])
    return m


def _end_slope(h0: float, h1: float, d0: float, d1: float) -> float:
    """The three-point end slope, clipped so the end stays monotone (as SciPy's PCHIP)."""
    s = ((2 * h0 + h1) * d0 - h0 * d1) / (h0 + h1)
    if s <= 0 or d0 <= 0:
        return 0.0
    if d1 <= 0 and s > 3 * d0:
        return 3 * d0
    return s


def evaluate(lx: Sequence[float], ly: Sequence[float], m: Sequence[float], t: float) -> float:
    """log latency at log load t; the end tangent outside the knots."""
    if t <= lx[0]:
        return ly[0] + m[0] * (t - lx[0])
    if t >= lx[-1]:
        return ly[-1] + m[-1] * (t - lx[-1])
    i = next(k for k in range(1, len(lx)) if lx[k] >= t) - 1
    h = lx[i + 1] - lx[i]
    s = (t - lx[i]) / h
    h10, h01, h11 = s * (1 - s) ** 2, s * s * (3 - 2 * s), s * s * (s - 1)
    # the Hermite form with h00 = 1 - h01, so a flat stretch is exactly flat (no rounding dip)
    return ly[i] + h01 * (ly[i + 1] - ly[i]) + h * (h10 * m[i] + h11 * m[i + 1])


def invert(lx: Sequence[float], ly: Sequence[float], m: Sequence[float], target: float) -> float:
    """The lowest log load at which the interpolant reaches `target`: -inf (0 load) below a
    flat start, +inf past a flat end."""
    if target <= ly[0]:
        return lx[0] - (ly[0] - target) / m[0] if m[0] > 0 else -math.inf
    if target > ly[-1]:
        return lx[-1] + (target - ly[-1]) / m[-1] if m[-1] > 0 else math.inf
    left, right = lx[0], lx[-1]
    for _ in range(60):
        mid = (left + right) / 2
        if evaluate(lx, ly, m, mid) < target:
            left = mid
        else:
            right = mid
    return (left + right) / 2
