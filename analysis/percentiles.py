"""A percentile as PerfHub shows it: a value, how many requests it rests on, and its error bound.

Percentiles are never averaged (docs/method.md): distributions are merged first
(sketches or bucket counts), then the percentile is taken from the merge.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

STANDARD_QUANTILES = (0.5, 0.9, 0.95, 0.99, 0.999)


def label(q: float) -> str:
    """0.99 -> "p99", 0.999 -> "p999", 0.5 -> "p50"."""
    return "p" + f"{q * 100:g}".replace(".", "")


# The one list of latency figures a measured run records (load tests, baselines, pages, gate):
# `<metric>_<pXX>_ms`, e.g. `ttft_p99_ms`.
PERCENTILE_LABELS = tuple(label(q) for q in STANDARD_QUANTILES)  # "p50" .. "p999"
QUANTILE_OF = dict(zip(PERCENTILE_LABELS, STANDARD_QUANTILES, strict=True))
LATENCY_METRICS = ("e2e", "ttft", "tpot")
# How pages and messages name each latency (end to end, time to first token, time per output token).
LATENCY_LABELS = {"e2e": "E2E", "ttft": "TTFT", "tpot": "TPOT"}


def latency_field(metric: str, p: str) -> str:
    return f"{metric}_{p}_ms"


def tool_percentile(values: Sequence[float], q: float) -> float:
    """The q-quantile (0-1) of one run's own per-request values by numpy's default rule (linear
    between the two nearest ranks): the rule vLLM's and GenAI-Perf's summaries are computed
    with, so a figure taken here from their files is the one the tool wrote or would write."""
    return float(np.percentile(values, q * 100))


LATENCY_FIELDS = tuple(latency_field(m, p) for m in LATENCY_METRICS for p in PERCENTILE_LABELS)


def minimum_count(q: float) -> int:
    """Requests needed before a quantile means anything: ~1/(1-q), and never fewer than 20."""
    return max(20, math.ceil(1 / (1 - q) - 1e-9))


# Where a figure was measured, part of its identity: "client" (a load generator, or a gateway
# pushing one row per request: what users feel, from send) or "server" (the engine's own
# histograms: from arrival at the engine, after the HTTP server and tokenizer). Both are true
# and differ; their difference is a layer of its own, never a discrepancy to average away.
VANTAGES = ("client", "server")
# Live percentiles say their vantage through their method: request rows are merged into
# sketches, engine histograms are bucket-bounded.
VANTAGE_OF_METHOD = {"sketch": "client", "exact": "client", "bucket-bounded": "server"}

# An engine histogram's bucket more than this many times wider at its top than at its bottom
# (vLLM's end-to-end 5-10 s bucket is 2x; TGI's are all 1.5x) leaves the interpolated value
# too loose to stand alone: the true percentile may be far below or above it. Such a value is
# shown with its bucket ("in 5,000-10,000, est. 8,252") and an SLO inside it gets no verdict.
WIDE_BUCKET_RATIO = 1.5

# An SLO verdict on a percentile: met, missed, or (bucket-bounded, the SLO inside the bucket)
# unsure: the histogram cannot tell.
MET, MISSED, UNSURE = "met", "missed", "unsure"


@dataclass(frozen=True)
class Percentile:
    q: float
    value: float | None  # None: no data, or the quantile lies above the last finite bucket edge
    count: int  # requests the percentile rests on
    lower: float | None = None  # the true value lies within [lower, upper]
    upper: float | None = None
    method: str = "sketch"  # "sketch" | "bucket-bounded" | "exact"
    above_last_edge: float | None = None  # bucket-bounded and in +Inf: "> this edge"
    below_first_edge: float | None = None  # bucket-bounded, in the first bucket: "< this edge"

    @property
    def vantage(self) -> str | None:
        """ "client" or "server" (see VANTAGES); None without data."""
        return VANTAGE_OF_METHOD.get(self.method)

    @property
    def bound(self) -> float | None:
        """The value, or the edge a bucket-bounded percentile is known to lie beyond or
        within (an upper bound in the first bucket, a lower bound in +Inf)."""
        if self.value is not None:
            return self.value
        return self.below_first_edge if self.below_first_edge is not None else self.above_last_edge

    @property
    def wide_bucket(self) -> bool:
        """An engine histogram's interpolated value inside a wide bucket (WIDE_BUCKET_RATIO):
        where it lies is the bucket, the value only an estimate within it."""
        if self.method != "bucket-bounded" or self.value is None:
            return False
        if self.lower is None or self.upper is None:
            return False
        # Strictly wider, with room for float noise: TGI's buckets are exactly 1.5x apart
        # (0.0001 x 1.5^i) and must read alike whatever the rounding of each edge.
        return self.lower <= 0 or self.upper > WIDE_BUCKET_RATIO * self.lower * (1 + 1e-9)

    def text(self, unit: str = "ms", digits: int = 0) -> str:
        """As pages show it: "283 ms", "< 300 ms", "> 10000 ms", "in 5,000 ms-10,000 ms, est.
        8,252 ms" (a wide bucket), or "—"."""
        return self.shown(lambda v: f"{v:,.{digits}f} {unit}".strip())

    def shown(self, number: Callable[[float], str], missing: str = "—") -> str:
        """The value through `number`, or the bucket edge it is known to be below ("< ...",
        inside the first bucket) or above ("> ...", in +Inf): never a guess; else `missing`.
        A value interpolated inside a wide bucket says the bucket first, then the estimate."""
        if self.wide_bucket:
            assert self.lower is not None and self.upper is not None and self.value is not None
            bucket = f"{number(self.lower)}\u2013{number(self.upper)}"
            return f"in {bucket}, est. {number(self.value)}"
        if self.value is not None:
            return number(self.value)
        if self.below_first_edge is not None:
            return f"< {number(self.below_first_edge)}"
        if self.above_last_edge is not None:
            return f"> {number(self.above_last_edge)}"
        return missing

    def against(self, target: float) -> str | None:
        """The SLO verdict of this percentile against `target` (same unit): MET (at most it),
        MISSED, or UNSURE when an engine histogram's bucket holds the target (a P99 somewhere
        in 5-10 s neither meets nor misses 6 s for sure; the interpolated value is no
        evidence either way). None without data."""
        if self.method == "bucket-bounded":
            low = self.above_last_edge if self.above_last_edge is not None else self.lower
            high = None if self.above_last_edge is not None else self.upper
            if low is None and high is None:
                return None
            if high is not None and high <= target:
                return MET  # `le` buckets: every value counted is at most the edge
            if low is not None and low >= target:
                return MISSED  # ...and above the bucket's lower edge
            return UNSURE
        if self.value is None:
            return None
        return MET if self.value <= target else MISSED

    @property
    def label(self) -> str:
        return label(self.q)

    @property
    def sufficient(self) -> bool:
        return self.count >= minimum_count(self.q)

    @property
    def shortfall(self) -> str:
        """Why the percentile is no measurement, as pages say it beside it ("" when it is):
        "needs at least 1,000 requests; 300 counted"."""
        if self.sufficient:
            return ""
        return f"needs at least {minimum_count(self.q):,} requests; {round(self.count):,} counted"

    def to_dict(self) -> dict:
        return {
            "q": self.q,
            "value": self.value,
            "count": self.count,
            "lower": self.lower,
            "upper": self.upper,
            "wide_bucket": self.wide_bucket,
            "method": self.method,
            "above_last_edge": self.above_last_edge,
            "below_first_edge": self.below_first_edge,
            "vantage": self.vantage,
            "sufficient": self.sufficient,
        }
