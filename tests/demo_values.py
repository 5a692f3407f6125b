"""Consistent measured values for tests that need a realistic baseline (the demo's rules).

Latency distributions are log-normal through the stated P50 and P99, so P90/P95/P999 are
consistent with them; E2E P50 is TTFT P50 plus output tokens x TPOT P50; throughput follows
from the workload (Little's law for a fixed concurrency, the request rate for an open loop).
"""

from __future__ import annotations

import math
from typing import Any

_Z = {"p50": 0.0, "p90": 1.2816, "p95": 1.6449, "p99": 2.3263, "p999": 3.0902}


def latencies(metric: str, p50: float, p99: float) -> dict[str, float]:
    """P50..P999 columns of a log-normal distribution through the given P50 and P99 (ms)."""
    sigma = math.log(p99 / p50) / _Z["p99"]
    return {f"{metric}_{p}_ms": round(p50 * math.exp(sigma * z), 1) for p, z in _Z.items()}


def measured(
    *,
    ttft: tuple[float, float],
    tpot: tuple[float, float],
    e2e_p99: float,
    prompt_tokens: float,
    output_tokens: float,
    concurrency: int | None = None,
    request_rate: float | None = None,
    qps: float | None = None,
    duration_s: float = 1800,
    **extra: Any,
) -> dict[str, Any]:
    """A baseline's measured fields, consistent with each other (see the module docstring)."""
    e2e_p50 = round(ttft[0] + output_tokens * tpot[0], 1)
    if qps is None:
        qps = concurrency / (e2e_p50 / 1000) if concurrency else request_rate
    qps = round(qps, 2)
    return {
        "concurrency": concurrency,
        "request_rate": request_rate,
        "prompt_tokens_mean": prompt_tokens,
        "prompt_tokens_std": round(prompt_tokens * 0.6),
        "output_tokens_mean": output_tokens,
        "output_tokens_std": round(output_tokens * 0.5),
        "duration_s": duration_s,
        "request_count": int(qps * duration_s),
        "qps": qps,
        "input_tps": round(qps * prompt_tokens, 1),
        "output_tps": round(qps * output_tokens, 1),
        **latencies("e2e", e2e_p50, e2e_p99),
        **latencies("ttft", *ttft),
        **latencies("tpot", *tpot),
        **extra,
    }
