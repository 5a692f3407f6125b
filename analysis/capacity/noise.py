"""How noisy a measured percentile is: the order statistic it is read from, the distribution's
log-spread, and run-to-run scatter (the weights of the curve fits)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache
from statistics import NormalDist

import numpy as np
from scipy import stats

from analysis.capacity.points import DEFAULT_SIGMA, LATENCY_RUN_TO_RUN, Point


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


def run_log_spread(
    p50_ms: float | None, percentiles: Mapping[float, float | None], count: int | None
) -> float | None:
    """The log-spread sigma of a run's distribution from the widest of its percentiles above the
    median (`log_spread`), for a percentile that cannot tell its own: a P50. Without it a P50
    took `DEFAULT_SIGMA` (0.5), the spread of a jumpy TTFT, also for a TPOT whose P99 is 3% above
    its P50 (each request's TPOT is a mean over its tokens), so the steadiest curve of a sweep
    weighed least in a joint fit. None when no percentile above the median tells it."""
    for quantile in sorted(percentiles, reverse=True):
        value = percentiles[quantile]
        if value and (sigma := log_spread(p50_ms, value, quantile, count)) is not None:
            return sigma
    return None


def point_spread(
    p50_ms: float | None,
    value_ms: float,
    quantile: float,
    count: int | None,
    run_percentiles: Mapping[float, float | None],
) -> float | None:
    """The log-spread of the run a curve point comes from: told by the point's own percentile
    and the run's P50 (`log_spread`), else, for a P50, by the run's widest percentile
    (`run_log_spread`). One rule for the planner and its accuracy bench."""
    own = log_spread(p50_ms, value_ms, quantile, count)
    return own if own is not None else run_log_spread(p50_ms, run_percentiles, count)


def point_log_se(point: Point, quantile: float) -> float:
    """A point's total log noise: its percentile's sampling error, run-to-run spread or floor."""
    own = percentile_log_se(quantile, point.count, point.sigma)
    runs = LATENCY_RUN_TO_RUN
    values = [point.value_ms, *point.repeats]
    if len(values) >= 2 and all(v > 0 for v in values):
        logs = [math.log(v) for v in values]
        mean = sum(logs) / len(logs)
        sd = math.sqrt(sum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
        runs = max(LATENCY_RUN_TO_RUN, sd)
    return math.sqrt(own**2 + runs**2)


def percentile_z(quantile: float) -> float:
    """z of a quantile of the standard normal: log(P_q / P50) = z * sigma for a log-normal."""
    return NormalDist().inv_cdf(quantile)
