"""A cold start in the first requests: with no warm-up, the first requests carry model loading,
CUDA-graph capture or cache misses, so the run's TTFT tail is a one-off, not the service."""

from __future__ import annotations

import math
import statistics

from analysis.fingerprint import quantile

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "cold_start"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    ttfts = view.ttft_in_start_order_ms
    if not ttfts:
        return _from_summary(view, t)
    if len(ttfts) < t.cold_start_min_requests:
        return []
    head_n = max(3, math.ceil(t.cold_start_head_share * len(ttfts)))
    head, rest = ttfts[:head_n], sorted(ttfts[head_n:])
    head_median = statistics.median(head)
    rest_p99 = quantile(rest, 0.99)
    if rest_p99 <= 0 or head_median <= t.cold_start_ratio * rest_p99:
        return []
    return [
        Finding(
            NAME,
            Severity.REFUSE,
            f"the first {head_n} requests' median TTFT is {head_median:,.0f} ms, "
            f"{head_median / rest_p99:.1f}x the P99 of the other {len(rest)} "
            f"({rest_p99:,.0f} ms): a cold start sits in the run's tail",
            "warm the server up before measuring (guidellm --warmup, GenAI-Perf/AIPerf "
            "--warmup-request-count, or one throw-away vLLM bench run)",
            {
                "head_requests": head_n,
                "head_ttft_median_ms": round(head_median, 1),
                "rest_ttft_p99_ms": round(rest_p99, 1),
            },
        )
    ]


def _from_summary(view: RunView, t: Thresholds) -> list[Finding]:
    """Without per-request order, a TTFT maximum far above the P99 is a one-off the tail carries
    (a cold start or a stall; which request it was is unknown): a warning."""
    p99, worst, n = view.fields.get("ttft_p99_ms"), view.ttft_max_ms, view.count
    if not p99 or not worst or not n or n < t.cold_start_min_requests:
        return []
    if worst <= t.cold_start_ratio * p99:
        return []
    return [
        Finding(
            NAME,
            Severity.WARN,
            f"the slowest TTFT is {worst:,.0f} ms, {worst / p99:.1f}x the P99 ({p99:,.0f} ms): "
            "one request waited far beyond the tail, as a cold start does (the file does not "
            "say which request it was)",
            "warm the server up before measuring, and keep per-request records to see which "
            "requests were slow",
            {"ttft_max_ms": worst, "ttft_p99_ms": p99},
        )
    ]


register(Check(NAME, "cold start in the first requests", run, order=40))
