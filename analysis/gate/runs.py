"""One load-test run as the gate sees it, validated once and its throughput noise measured."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from analysis import gatestats

_Z99 = 2.3263479  # the standard normal's 99th percentile


@dataclass(frozen=True)
class RunData:
    """One load-test run as the gate sees it.

    `values`: run-record values by metric (`ttft_p99_ms`, `qps`...). `samples`: per-request ms by
    family (`"ttft"`, `"tpot"`, `"e2e"`). `requests`: completed requests (how many a summary
    percentile rests on). `concurrency`: the slots of a closed-loop run (request rate unlimited),
    which lets the gate replay its requests to learn how noisy its throughput is.
    `output_tokens_cv`: std/mean of output lengths (token rates vary with them too).
    """

    values: Mapping[str, float | None]
    samples: Mapping[str, Sequence[float]] | None = None
    requests: int | None = None
    concurrency: int | None = None
    output_tokens_cv: float | None = None


@dataclass(frozen=True)
class PreparedRun:
    """A run validated, its samples sorted on the log scale, its throughput noise measured.

    Prepare each run once (`prepare`): a baseline set is compared with many candidates.
    """

    values: dict[str, object]
    logs: dict[str, np.ndarray]  # sorted log(ms) by family
    requests: int | None
    throughput_var: float | None  # within-run variance of log(requests / duration)
    throughput_noise: np.ndarray | None  # its standardized shape (slow runs drag: a low tail)
    output_tokens_cv: float | None
    medians: dict[str, tuple[float, float]]  # (log median, its standard error) by family


def prepare(run: RunData | PreparedRun, side: str = "run") -> PreparedRun:
    if isinstance(run, PreparedRun):
        return run
    values = dict(run.values)  # checked row by row: only gated metrics must be numbers
    samples = clean_samples(f"{side}_samples", run.samples)
    # A zero (a cached response) has no logarithm; 1 microsecond stands in for it.
    logs = {family: np.sort(np.log(np.maximum(a, 1e-3))) for family, a in samples.items()}
    requests = run.requests
    if requests is None and samples:
        requests = max(a.size for a in samples.values())
    throughput_var = throughput_noise = None
    if run.concurrency and requests and requests >= 2:
        # Replays of the run's requests through its slots measure its throughput noise: fresh
        # lognormal draws through its E2E P50 and P99 (the slowest requests make a run's end
        # drag) give the noise's shape, long low tail included, and stand in when the file has
        # no E2E per request (no `itls`); a resample of the run's own requests keeps whatever
        # shape they have. The larger variance wins.
        if "e2e" in samples:
            p50, p99 = (float(v) for v in np.quantile(samples["e2e"], [0.5, 0.99]))
        else:
            p50, p99 = _positive(values.get("e2e_p50_ms")), _positive(values.get("e2e_p99_ms"))
        if p50 is not None and p99 is not None and p99 > p50 > 0:
            # Rounded to 0.05: the replays are cached per sigma (a 2.5% error at sigma 1).
            sigma = round(math.log(p99 / p50) / _Z99 * 20) / 20
            throughput_var, throughput_noise = gatestats.lognormal_closed_loop_noise(
                sigma, requests, run.concurrency
            )
        if "e2e" in samples and samples["e2e"].size >= 2:
            resampled = gatestats.closed_loop_log_variance(samples["e2e"], run.concurrency)
            throughput_var = max(throughput_var or 0.0, resampled)
    medians = {family: gatestats.quantile_log(a, 0.5)[:2] for family, a in logs.items()}
    return PreparedRun(
        values, logs, requests, throughput_var, throughput_noise, run.output_tokens_cv, medians
    )


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


def clean_samples(
    name: str, samples: Mapping[str, Sequence[float]] | None
) -> dict[str, np.ndarray]:
    if not samples:
        return {}
    cleaned = {}
    for family, values in samples.items():
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}[{family!r}] must be a sequence of numbers") from exc
        if array.ndim != 1:
            raise ValueError(f"{name}[{family!r}] must be a flat sequence of numbers")
        if not np.all(np.isfinite(array)) or np.any(array < 0):
            raise ValueError(f"{name}[{family!r}] must hold finite, non-negative numbers")
        if array.size:
            cleaned[family] = array
    return cleaned
