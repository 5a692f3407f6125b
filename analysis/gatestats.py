"""The statistics behind the release gate, as plain vectorised functions (no Django).

Everything works on the log scale, so a difference is a ratio (log 1.1 = a 10% rise) and a
run-level effect that scales a whole run (a slower GPU clock, a noisy neighbour) is additive.

- `hodges_lehmann`: the shift between two samples that Mann-Whitney's U would call "none",
  with the interval from inverting U (distribution-free; ties count a half).
- `quantile_log`: a sample quantile with its Maritz-Jarrett standard error (distribution-free,
  from the order statistics around it), and how many requests lie beyond it (the "tail" a P99
  rests on).
- `between_run_variance`: DerSimonian-Laird's moment estimate of the variance runs add on top of
  their within-run sampling noise, from runs grouped by side (baseline runs, candidate runs).
- `closed_loop_log_variance`: within-run noise of a closed-loop run's throughput, by
  resampling its requests and replaying them through `concurrency` slots as a load generator
  with a concurrency limit does (the makespan's drain makes heavy tails noisy).
- `holm`: Holm's step-down adjustment, so the rows of one verdict share one false-alarm rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy import special, stats

_SE_FLOOR = 0.003  # sketch-rebuilt samples tie within 1% bins; never claim less than 0.3%


def hodges_lehmann(
    base_sorted: np.ndarray, cand: np.ndarray, *, z: float = 1.959964
) -> tuple[float, float, float]:
    """(shift, low, high): candidate - baseline, with the interval where U is not extreme.

    `base_sorted` must be sorted. The estimate solves U(d) = nm/2, the bounds U(d) = nm/2 -/+ z
    sd(U), where U(d) counts pairs with cand - d above base. Bisection on all three at once
    with one `searchsorted` per step: O((n + m) log n) per step, no n x m matrix.
    """
    n, m = base_sorted.size, cand.size
    sd_u = math.sqrt(n * m * (n + m + 1) / 12.0)
    targets = np.array([n * m / 2.0 - z * sd_u, n * m / 2.0, n * m / 2.0 + z * sd_u])
    lo = np.full(3, float(cand.min() - base_sorted[-1]) - 1e-9)
    hi = np.full(3, float(cand.max() - base_sorted[0]) + 1e-9)
    # U(d) falls as d rises; find d where U(d) crosses each target.
    for _ in range(60):
        mid = (lo + hi) / 2.0
        queries = (cand[None, :] - mid[:, None]).ravel()
        less = np.searchsorted(base_sorted, queries, side="left").reshape(3, m).sum(axis=1)
        less_eq = np.searchsorted(base_sorted, queries, side="right").reshape(3, m).sum(axis=1)
        u = (less + less_eq) / 2.0
        above = u > targets
        lo = np.where(above, mid, lo)
        hi = np.where(above, hi, mid)
        if float(np.max(hi - lo)) < 1e-5:
            break
    mid = (lo + hi) / 2.0
    # targets ascend in U, so shifts descend: the highest U target is the lowest shift.
    return float(mid[1]), float(mid[2]), float(mid[0])


def quantile_log(sorted_logs: np.ndarray, q: float) -> tuple[float, float, int]:
    """(log quantile, its standard error, requests beyond it) of a sorted sample of logs.

    The standard error is Maritz-Jarrett's: the spread of the order statistic that estimates the
    quantile, from Beta weights over the whole sample (smoother than one spacing of the sample).
    """
    n = sorted_logs.size
    value = float(np.quantile(sorted_logs, q))
    m = min(max(math.floor(q * n + 0.5), 2), n - 1)
    if n < 3:
        return value, _SE_FLOOR, math.floor(n * (1 - q) + 1e-9)
    cdf = special.betainc(m - 1, n - m, np.arange(n + 1) / n)
    weights = np.diff(cdf)
    c1 = float(np.dot(weights, sorted_logs))
    c2 = float(np.dot(weights, sorted_logs**2))
    se = max(math.sqrt(max(c2 - c1 * c1, 0.0)), _SE_FLOOR)
    tail = math.floor(n * (1 - q) + 1e-9)
    return value, se, tail


def between_run_variance(
    groups: Sequence[tuple[np.ndarray, np.ndarray]],
) -> tuple[float, int]:
    """(tau^2, degrees of freedom) from groups of (per-run log values, within-run variances).

    Each group (the baseline runs, the candidate runs) is centred on its own weighted mean, so a
    real regression between the groups is not mistaken for spread. Zero degrees of freedom (one
    run per side) means the spread is unknown and tau^2 is 0.
    """
    q_stat = 0.0
    c_stat = 0.0
    df = 0
    for values, variances in groups:
        if values.size < 2:
            continue
        w = 1.0 / np.maximum(variances, 1e-12)
        mean = float(np.sum(w * values) / np.sum(w))
        q_stat += float(np.sum(w * (values - mean) ** 2))
        c_stat += float(np.sum(w) - np.sum(w**2) / np.sum(w))
        df += values.size - 1
    if df == 0 or c_stat <= 0:
        return 0.0, df
    return max(0.0, (q_stat - df) / c_stat), df


def weighted_mean(values: np.ndarray, variances: np.ndarray, tau2: float) -> tuple[float, float]:
    """Random-effects mean of per-run log values and its variance."""
    w = 1.0 / (variances + tau2)
    return float(np.sum(w * values) / np.sum(w)), float(1.0 / np.sum(w))


def sample_log_variance(values: np.ndarray) -> float:
    return float(np.var(values, ddof=1)) if values.size > 1 else 0.0


def closed_loop_log_variance(
    e2e_ms: np.ndarray, concurrency: int, *, resamples: int = 128, seed: int = 0
) -> float:
    """Variance of log(makespan) of a closed-loop run, by replaying resampled requests.

    Requests go, in order, to whichever of the `concurrency` slots frees first; the run ends when
    the last slot does. log(requests / makespan) has the same variance, and so (nearly) has
    log(tokens / makespan). Vectorised over resamples: one small numpy step per request.
    """
    n = e2e_ms.size
    if n < 2 or concurrency < 1:
        return 0.0
    rng = np.random.default_rng(seed)
    draws = e2e_ms[rng.integers(0, n, size=(n, resamples))]  # row i: request i of each replay
    slots = min(concurrency, n)
    free = np.zeros((resamples, slots))
    # The first `slots` requests start at once; afterwards each goes to the earliest free slot.
    free[:, :] = draws[:slots].T
    columns = np.arange(resamples)
    for i in range(slots, n):
        first = np.argmin(free, axis=1)
        free[columns, first] += draws[i]
    return float(np.var(np.log(free.max(axis=1)), ddof=1))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values (step-down, monotone, capped at 1), in the input order."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, np.maximum.accumulate(p[order] * (m - np.arange(m))))
    out = np.empty(m)
    out[order] = adjusted
    return [float(v) for v in out]


def one_sided_p(estimate: float, se: float, df: float | None, *, worse_if_positive: bool) -> float:
    """P-value of the estimate moving the bad way (normal, or Student t when df is finite)."""
    if se <= 0:
        return 0.0 if (estimate > 0) == worse_if_positive and estimate != 0 else 1.0
    t = estimate / se if worse_if_positive else -estimate / se
    if df is None or not math.isfinite(df):
        return float(stats.norm.sf(t))
    return float(stats.t.sf(t, df))


def critical(level: float, df: float | None) -> float:
    """One-sided critical value at `level` (e.g. 0.001)."""
    if df is None or not math.isfinite(df):
        return float(stats.norm.isf(level))
    return float(stats.t.isf(level, df))


def satterthwaite_df(within: float, between: float, between_df: int) -> float:
    """Degrees of freedom of within (known) + between (estimated with `between_df`) variance."""
    if between <= 0 or between_df <= 0:
        return math.inf
    return (within + between) ** 2 / (between**2 / between_df)
