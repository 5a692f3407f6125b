"""The statistics behind the release gate, as plain vectorised functions (no Django).

Everything works on the log scale, so a difference is a ratio (log 1.1 = a 10% rise) and a
run-level effect that scales a whole run (a slower GPU clock, a noisy neighbour) is additive.

- `hodges_lehmann`: the shift between two samples that Mann-Whitney's U would call "none",
  with the interval from inverting U (distribution-free).
- `quantile_log`: a sample quantile with its Maritz-Jarrett standard error (distribution-free,
  from the order statistics around it), and how many requests lie beyond it (the "tail" a P99
  rests on).
- `between_run_variance`: DerSimonian-Laird's moment estimate of the variance runs add on top of
  their within-run sampling noise, from runs grouped by side (baseline runs, candidate runs).
- `closed_loop_log_variance` / `lognormal_closed_loop_noise`: within-run noise of a
  closed-loop run's throughput, by replaying requests (resampled from the run, or drawn fresh
  from a lognormal through its E2E P50 and P99) through `concurrency` slots as a load generator
  with a concurrency limit does (the drain at the end makes heavy-tailed runs noisy, with a
  long low tail that `null_draws` keeps and a normal approximation would not).
- `holm`: Holm's step-down adjustment, so the rows of one verdict share one false-alarm rate.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy import signal, special

SE_FLOOR = 0.003  # sketch-rebuilt samples tie within 1% bins; never claim less than 0.3%


def hodges_lehmann(
    base: np.ndarray, cand: np.ndarray, *, z: float = 1.959964, resolution: float = 1e-3
) -> tuple[float, float, float]:
    """(shift, low, high): candidate - baseline, with the interval where Mann-Whitney's U is not
    extreme (nm/2 -/+ z sd(U)).

    The shift is the median of all n x m pairwise differences, the bounds their quantiles at
    U's critical counts. The pairwise differences are counted exactly on a grid of `resolution`
    (0.1% on the log scale) by convolving the two histograms (FFT): O(bins log bins) whatever
    n x m is.
    """
    n, m = base.size, cand.size
    low_edge = float(min(base.min(), cand.min()))
    span = float(max(base.max(), cand.max())) - low_edge
    step = max(resolution, span / 2**16)  # bound the grid for absurd ranges
    bins = int(span / step) + 1
    hb = np.bincount(np.rint((base - low_edge) / step).astype(np.int64), minlength=bins)
    hc = np.bincount(np.rint((cand - low_edge) / step).astype(np.int64), minlength=bins)
    pairs = np.cumsum(np.maximum(signal.fftconvolve(hc, hb[::-1]), 0.0))
    pairs *= (n * m) / pairs[-1]  # FFT round-off; index k is the difference (k - bins + 1) step
    sd_u = math.sqrt(n * m * (n + m + 1) / 12.0)
    counts = np.array([n * m / 2.0 - z * sd_u, n * m / 2.0, n * m / 2.0 + z * sd_u])
    index = np.searchsorted(pairs, np.clip(counts, 0, n * m))
    shifts = (index - (bins - 1)) * step
    return float(shifts[1]), float(shifts[0]), float(shifts[2])


def quantile_log(sorted_logs: np.ndarray, q: float) -> tuple[float, float, int]:
    """(log quantile, its standard error, requests beyond it) of a sorted sample of logs.

    The standard error is Maritz-Jarrett's: the spread of the order statistic that estimates the
    quantile, from Beta weights over the whole sample (smoother than one spacing of the sample).
    """
    n = sorted_logs.size
    position = q * (n - 1)  # numpy's default (linear) quantile, on an already sorted sample
    below = math.floor(position)
    above = min(below + 1, n - 1)
    value = float(
        sorted_logs[below] + (sorted_logs[above] - sorted_logs[below]) * (position - below)
    )
    m = min(max(math.floor(q * n + 0.5), 2), n - 1)
    if n < 3:
        return value, SE_FLOOR, math.floor(n * (1 - q) + 1e-9)
    # The Beta weights vanish a few rank deviations away from m: only that window counts.
    reach = math.ceil(10 * math.sqrt(n * q * (1 - q))) + 10
    first, last = max(m - reach, 0), min(m + reach, n)
    cdf = special.betainc(m - 1, n - m, np.arange(first, last + 1) / n)
    weights = np.diff(cdf)
    window = sorted_logs[first:last]
    c1 = float(np.dot(weights, window))
    c2 = float(np.dot(weights, window**2))
    se = max(math.sqrt(max(c2 - c1 * c1, 0.0)), SE_FLOOR)
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
    makespans = _replay_makespans(e2e_ms[rng.integers(0, n, size=(n, resamples))], concurrency)
    return float(np.var(np.log(makespans), ddof=1))


NOISE_REPLAYS = 2048  # replays behind one throughput noise shape


@functools.lru_cache(maxsize=128)
def lognormal_closed_loop_noise(
    sigma: float, requests: int, concurrency: int
) -> tuple[float, np.ndarray]:
    """(variance, standardized shape) of log throughput for lognormal requests.

    Requests drawn fresh from a lognormal of log-sd `sigma` go through `concurrency` slots;
    the variance of log(requests / makespan) across NOISE_REPLAYS replays and its shape (sorted,
    mean 0, sd 1) are kept. Fresh draws, not a resample of one run: the slow outliers that make a
    run's end drag are rarer than one run shows, and they give throughput a long low tail (at
    sigma 1, 400 requests, a run falls 3.4 standard deviations low 1% of the time, 30x the
    normal's rate). The median only scales the makespan, so the result is cached by (sigma,
    requests, concurrency): round sigma first.
    """
    if requests < 2 or concurrency < 1:
        return 0.0, np.zeros(1)
    rng = np.random.default_rng(0)
    draws = np.exp(sigma * rng.standard_normal((requests, NOISE_REPLAYS)))
    logs = -np.log(_replay_makespans(draws, concurrency))
    sd = float(np.std(logs))
    if sd == 0:
        return 0.0, np.zeros(1)
    return sd * sd, np.sort((logs - logs.mean()) / sd)


def null_draws(
    noises: Sequence[np.ndarray],
    weights: Sequence[float],
    scales: Sequence[float],
    normal_sd: float,
    *,
    draws: int = 20000,
    seed: int = 0,
) -> np.ndarray:
    """Draws of sum_j weights_j x scales_j x noise_j + Normal(0, normal_sd): a statistic's null.

    Each noise_j is a standardized sample (e.g. a run's throughput noise shape); the sum is
    sampled by picking from each independently. Seeded: the same inputs give the same draws.
    """
    rng = np.random.default_rng(seed)
    total = rng.standard_normal(draws) * normal_sd
    for noise, weight, scale in zip(noises, weights, scales, strict=True):
        total += weight * scale * noise[rng.integers(0, noise.size, draws)]
    return total


def _replay_makespans(draws: np.ndarray, concurrency: int) -> np.ndarray:
    """Row i of `draws` is request i of each replay; the makespan of each replay."""
    n, resamples = draws.shape
    slots = min(concurrency, n)
    # The first `slots` requests start at once; afterwards each goes to the earliest free slot.
    free = np.array(draws[:slots].T)
    columns = np.arange(resamples)
    for i in range(slots, n):
        first = np.argmin(free, axis=1)
        free[columns, first] += draws[i]
    return free.max(axis=1)


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
        return 0.5 * math.erfc(t / math.sqrt(2.0))
    return float(special.stdtr(df, -t))


def empirical_p(estimate: float, null: np.ndarray, *, worse_if_positive: bool) -> float:
    """P-value from draws of the statistic's null distribution (never 0: one draw is added)."""
    beyond = np.count_nonzero(null >= estimate if worse_if_positive else null <= estimate)
    return (beyond + 1) / (null.size + 1)


def critical(level: float, df: float | None) -> float:
    """One-sided critical value at `level` (e.g. 0.001)."""
    if df is None or not math.isfinite(df):
        return float(-special.ndtri(level))
    return float(-special.stdtrit(df, level))


def satterthwaite_df(within: float, between: float, between_df: int) -> float:
    """Degrees of freedom of within (known) + between (estimated with `between_df`) variance."""
    if between <= 0 or between_df <= 0:
        return math.inf
    return (within + between) ** 2 / (between**2 / between_df)
