"""Physical ranges of every number PerfHub accepts, and the checks that use them.

One table for every entry point (agent ingest, both of its validation paths; load-test
imports from files, the API and the gate; dossier Markdown imports), documented in
docs/contracts.md. A value outside its range is a unit mistake, a corrupted file or a probe,
never a measurement: storing it would make a baseline the gate trusts, or an Infinity in a
roll-up. The bounds are generous (an order of magnitude past today's largest hardware) so a
real measurement never meets them; what they guarantee is that sums over any realistic
number of samples stay finite.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Range:
    low: float
    high: float
    unit: str
    why: str

    def problem(self, value: float) -> str | None:
        """Why `value` cannot be a measurement of this kind, or None when it can."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return "A number is required."
        if not math.isfinite(value):
            return "A finite number is required (not NaN or Infinity)."
        if not self.low <= value <= self.high:
            return f"{value:g} is outside {self.low:g}..{self.high:g} {self.unit} ({self.why})."
        return None


DAY_MS = 86_400_000.0
LATENCY_MS = Range(0, DAY_MS, "ms", "a latency is under a day")
POWER_W = Range(0, 5_000, "W", "a GPU draws at most a few kW")
TEMPERATURE_C = Range(-50, 150, "°C", "a running GPU is between -50 and 150 °C")
CLOCK_MHZ = Range(0, 10_000, "MHz", "a GPU clock is under 10 GHz")
RATIO = Range(0, 1, "", "a ratio is between 0 and 1")
GPU_MEMORY_BYTES = Range(0, 2**44, "bytes", "a GPU holds under 16 TiB")
MEMORY_BYTES = Range(0, 2**50, "bytes", "a deployment holds under 1 PiB")
TOKENS = Range(0, 100_000_000, "tokens", "a request holds under 100 million tokens")
REQUEST_RATE = Range(0, 10_000_000, "requests/s", "a service serves under 10 million req/s")
TOKEN_RATE = Range(0, 10_000_000_000, "tokens/s", "a service emits under 10^10 tokens/s")
CONCURRENCY = Range(0, 10_000_000, "", "a load test keeps under 10 million requests in flight")
COUNT = Range(0, 10**12, "", "a load test sends under 10^12 requests")
DURATION_S = Range(0, 366 * 86_400, "s", "a run lasts under a year")
MONEY = Range(0, 10**9, "", "a price under a billion a unit")
GPUS = Range(0, 100_000, "GPUs", "a deployment has under 100,000 GPUs")


def quantile_order_problem(values: Iterable[tuple[str, float | None]]) -> str | None:
    """Why these (label, value) quantiles of ONE distribution, given in increasing quantile
    order, cannot be real (a higher quantile below a lower one), or None."""
    previous: tuple[str, float] | None = None
    for label, value in values:
        if value is None:
            continue
        if previous is not None and value < previous[1]:
            return (
                f"{label} ({value:g}) is below {previous[0]} ({previous[1]:g}): quantiles of "
                "one distribution never decrease"
            )
        previous = (label, value)
    return None


def ttft_problem(ttft: float | None, e2e: float | None) -> str | None:
    """A request's first token cannot come after its last: TTFT <= end-to-end latency."""
    if ttft is not None and e2e is not None and ttft > e2e:
        return f"TTFT {ttft:g} is above the end-to-end latency {e2e:g} of the same request"
    return None


LATENCY_METRICS = ("e2e", "ttft", "tpot")
# Stored percentile labels in the order their values may not decrease, and how they are shown.
PERCENTILE_LABELS = ("p50", "p90", "p95", "p99", "p999")
SHOWN = {"p50": "P50", "p90": "P90", "p95": "P95", "p99": "P99", "p999": "P99.9"}

# A measured run's fields (loadtests' MeasuredRun columns, dossier baselines): their range.
RUN_FIELD_RANGES: dict[str, Range] = {
    "concurrency": CONCURRENCY,
    "request_rate": REQUEST_RATE,
    "prompt_tokens_mean": TOKENS,
    "prompt_tokens_std": TOKENS,
    "output_tokens_mean": TOKENS,
    "output_tokens_std": TOKENS,
    "duration_s": DURATION_S,
    "request_count": COUNT,
    "qps": REQUEST_RATE,
    "input_tps": TOKEN_RATE,
    "output_tps": TOKEN_RATE,
    "gpu_util": RATIO,
    "sm_active": RATIO,
    "dram_active": RATIO,
    "mem_weights_bytes": MEMORY_BYTES,
    "mem_kv_bytes": MEMORY_BYTES,
    **{f"{m}_{p}_ms": LATENCY_MS for m in LATENCY_METRICS for p in PERCENTILE_LABELS},
}


def run_problems(fields: dict[str, float | int | None]) -> list[tuple[str, str]]:
    """(field, why) for each value of a measured run that cannot be real: out of its range,
    or a latency percentile below a lower one of the same metric."""
    problems = []
    for name, value in fields.items():
        rng = RUN_FIELD_RANGES.get(name)
        if rng is not None and value is not None and (why := rng.problem(value)):
            problems.append((name, why))
    if problems:
        return problems
    for metric in LATENCY_METRICS:
        names = {SHOWN[p]: f"{metric}_{p}_ms" for p in PERCENTILE_LABELS}
        why = quantile_order_problem((label, fields.get(name)) for label, name in names.items())
        if why:
            problems.append((names[why.split(" ", 1)[0]], why))
    return problems


# Engine exposition (counters, gauges, histogram sums and counts), raw: 30 years at a
# million tokens a second stay under it; a value past it is skipped like a NaN.
EXPOSITION_VALUE = Range(-1e15, 1e15, "", "an engine's counter or gauge stays under 10^15")

# A GPU sample (ingest `gpus[]`, dcgm-exporter scrapes): its fields' ranges.
GPU_FIELD_RANGES: dict[str, Range] = {
    "util": RATIO,
    "mem_util": RATIO,
    "sm_active": RATIO,
    "sm_occupancy": RATIO,
    "dram_active": RATIO,
    "mem_used_bytes": GPU_MEMORY_BYTES,
    "mem_total_bytes": GPU_MEMORY_BYTES,
    "power_w": POWER_W,
    "temp_c": TEMPERATURE_C,
    "sm_clock_mhz": CLOCK_MHZ,
}
# A request sample (ingest `requests[]`): its fields' ranges.
REQUEST_FIELD_RANGES: dict[str, Range] = {
    "ttft_ms": LATENCY_MS,
    "tpot_ms": LATENCY_MS,
    "e2e_ms": LATENCY_MS,
    "queue_ms": LATENCY_MS,
    "prompt_tokens": TOKENS,
    "output_tokens": TOKENS,
}


def gpu_problems(gpu: dict) -> list[tuple[str, str]]:
    """(field, why) for each value of one GPU sample that cannot be real."""
    problems = [
        (name, why)
        for name, rng in GPU_FIELD_RANGES.items()
        if gpu.get(name) is not None and (why := rng.problem(gpu[name]))
    ]
    used, total = gpu.get("mem_used_bytes"), gpu.get("mem_total_bytes")
    if not problems and used is not None and total is not None and used > total:
        problems.append(("mem_used_bytes", f"{used:g} bytes used is above the total {total:g}"))
    return problems


# A service's settings (dossier import): their ranges.
SERVICE_FIELD_RANGES: dict[str, Range] = {
    "slo_p99_e2e_ms": LATENCY_MS,
    "slo_p99_ttft_ms": LATENCY_MS,
    "slo_p99_tpot_ms": LATENCY_MS,
    "gpus_per_replica": GPUS,
    "replicas": GPUS,
    "gpu_hour_price": MONEY,
    "price_per_mtok": MONEY,
    "model_params_b": Range(0, 1_000_000, "billion parameters", "under 10^15 parameters"),
}


def field_problems(fields: dict, ranges: dict[str, Range]) -> list[tuple[str, str]]:
    """(field, why) for each value of `fields` outside its range in `ranges`. A blank or
    non-numeric value is not judged here: the field's own validation refuses it, by name."""
    return [
        (name, why)
        for name, value in fields.items()
        if name in ranges
        and (number := _number(value)) is not None
        and (why := ranges[name].problem(number))
    ]


def _number(value: object) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
