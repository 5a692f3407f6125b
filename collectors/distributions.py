"""Reading roll-up rows: additive traffic, merged distributions and the stored quantiles.

The read side of the roll-ups (`collectors.services.rollups` writes the rows): selectors, alert
sources and dashboards merge `ServiceRollup` rows into `Traffic`, take percentiles from the
merged sketches or bucket counts (`distribution_percentiles`; never an average of
percentiles, docs/method.md), and read the quantiles a service-merged row stores packed
(`unpack_quantiles`) through named accessors (`StoredQuantiles`), never by position.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from analysis import buckets, sketches
from analysis.percentiles import STANDARD_QUANTILES, Percentile, label
from collectors.models import GPU_SERIES, LATENCY_METRICS, GpuRollup, ServiceRollup

# Which scraped histogram feeds which latency: one statistic each. Per-request TPOT comes only
# from an engine's per-request histogram; its inter-token gaps are ITL, never TPOT.
SCRAPED_HISTOGRAM = {
    "e2e": "e2e_seconds",
    "ttft": "ttft_seconds",
    "tpot": "tpot_seconds",
    "itl": "itl_seconds",
    "queue": "queue_seconds",
    "prefill": "prefill_seconds",
    "decode": "decode_seconds",
}
# The engine gauges a roll-up row keeps the mean of: row field prefix -> canonical name.
GAUGES = {
    "running": "requests_running",
    "waiting": "requests_waiting",
    "kv_cache": "kv_cache_usage",
}


class OutcomeRates:
    """`error_rate` and `abort_rate` of anything counting `finished`, `errored` and `aborted`
    requests (`finished` counts all three outcomes): a point, a window, merged hosts."""

    finished: float
    errored: float
    aborted: float

    @property
    def error_rate(self) -> float | None:
        """Errored over finished requests; None without finished requests."""
        return self.errored / self.finished if self.finished else None

    @property
    def abort_rate(self) -> float | None:
        """Aborted over finished requests; None without finished requests."""
        return self.aborted / self.finished if self.finished else None


def merge_bucket_counts(items: list[buckets.BucketCounts]) -> buckets.BucketCounts | None:
    """Add bucket counts; layouts that differ are coarsened onto their shared edges first."""
    if not items:
        return None
    if any(item.edges != items[0].edges for item in items):
        edges = buckets.shared_edges(items)
        items = [buckets.coarsen(item, edges) for item in items]
    return buckets.merge_all(items)


@dataclass
class Traffic:
    """Additive traffic of any number of `ServiceRollup` rows, with merged distributions."""

    requests: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    request_seconds: float = 0.0
    scraped_requests: float = 0.0
    scraped_prompt_tokens: float = 0.0
    scraped_generation_tokens: float = 0.0
    scraped_seconds: float = 0.0
    scraped_busy_seconds: float = 0.0
    scraped_errors: float = 0.0
    scraped_aborts: float = 0.0
    # The requests the engine's per-request token histograms observed finishing, and their
    # tokens (vLLM): tokens per request without the tokens of clients that disconnected.
    scraped_token_requests: float = 0.0
    scraped_request_prompt_tokens: float = 0.0
    scraped_request_output_tokens: float = 0.0
    # ...and the observations the prompt tokens were summed over, where that histogram has its
    # own count (TGI's prompt histogram observes every validated sequence, not the successes).
    scraped_prompt_token_requests: float = 0.0
    # Preemptions (vLLM) or retractions (SGLang), and the requests finished in the scrape windows
    # that counted them; None while no window did (an engine without the counter): not 0.
    scraped_preemptions: float | None = None
    scraped_finished_counting_preemptions: float | None = None
    gauge_samples: int = 0
    gauge_weighted: dict[str, list[float]] = field(default_factory=dict)  # name -> [sum, weight]
    slo_good: dict[str, list[int]] = field(default_factory=dict)  # SLO key -> [judged, good]
    sketches: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    buckets: dict[str, list] = field(default_factory=lambda: defaultdict(list))

    def add_row(self, row: ServiceRollup) -> None:
        for name in (
            "requests", "errors", "prompt_tokens", "output_tokens", "request_seconds",
            "scraped_requests", "scraped_prompt_tokens", "scraped_generation_tokens",
            "scraped_seconds", "scraped_busy_seconds", "scraped_errors", "scraped_aborts",
            "scraped_token_requests", "scraped_request_prompt_tokens",
            "scraped_request_output_tokens", "scraped_prompt_token_requests", "gauge_samples",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(row, name))
        self.add_preemptions(row.scraped_preemptions, row.scraped_finished_counting_preemptions)
        for name in GAUGES:
            self.add_gauge(name, getattr(row, f"{name}_mean"), row.gauge_samples)
        self.add_slo_good(row.slo_good or {})
        for metric in LATENCY_METRICS:
            blob = getattr(row, f"{metric}_sketch")
            if blob is not None and getattr(row, f"{metric}_count"):
                self.sketches[metric].append(sketches.loads(bytes(blob)))
            data = getattr(row, f"{metric}_buckets")
            if data:
                self.buckets[metric].append(buckets.BucketCounts.from_dict(data))

    def add_preemptions(self, preemptions: float | None, finished: float | None) -> None:
        """Add preemptions counted over `finished` requests; None (not counted) adds nothing,
        so the sum stays None until something counted them."""
        if preemptions is None:
            return
        self.scraped_preemptions = (self.scraped_preemptions or 0.0) + preemptions
        self.scraped_finished_counting_preemptions = (
            self.scraped_finished_counting_preemptions or 0.0
        ) + (finished or 0.0)

    def add_slo_good(self, counts: dict[str, list[int]]) -> None:
        for key, (judged, good) in counts.items():
            acc = self.slo_good.setdefault(key, [0, 0])
            acc[0] += judged
            acc[1] += good

    def add_gauge(self, name: str, value: float | None, weight: float) -> None:
        if value is None or weight <= 0:
            return
        acc = self.gauge_weighted.setdefault(name, [0.0, 0.0])
        acc[0] += value * weight
        acc[1] += weight

    def gauge_mean(self, name: str) -> float | None:
        acc = self.gauge_weighted.get(name)
        return acc[0] / acc[1] if acc and acc[1] else None

    def _rate(self, scraped: float, pushed: float) -> float | None:
        # Engine counters see every request; pushed requests may be a sample. Prefer counters.
        if self.scraped_seconds > 0:
            return scraped / self.scraped_seconds
        if self.request_seconds > 0:
            return pushed / self.request_seconds
        return None

    @property
    def error_rate(self) -> float | None:
        """Errored requests over all finished ones (see `outcomes`)."""
        finished, errored, _ = self.outcomes
        return errored / finished if finished else None

    @property
    def busy_seconds(self) -> float:
        """The seconds with traffic: scrape windows in which requests finished, else the
        minutes with pushed rows."""
        return self.scraped_busy_seconds if self.scraped_seconds > 0 else self.request_seconds

    def busy_rate(self, scraped: float, pushed: float) -> float | None:
        """A count per second of traffic (see `busy_seconds`): what a load test measures."""
        if self.busy_seconds <= 0:
            return None
        return (scraped if self.scraped_seconds > 0 else pushed) / self.busy_seconds

    @property
    def qps(self) -> float | None:
        return self._rate(self.scraped_requests, self.requests)

    @property
    def prompt_tps(self) -> float | None:
        return self._rate(self.scraped_prompt_tokens, self.prompt_tokens)

    @property
    def generation_tps(self) -> float | None:
        return self._rate(self.scraped_generation_tokens, self.output_tokens)

    @property
    def outcomes(self) -> tuple[float, float, float]:
        """(finished, errored, aborted) requests: engine counters when scraped, else pushed
        rows (which know no aborts). `finished` counts all three outcomes."""
        if self.scraped_seconds > 0:
            finished = self.scraped_requests + self.scraped_errors + self.scraped_aborts
            return finished, self.scraped_errors, self.scraped_aborts
        return float(self.requests), float(self.errors), 0.0

    def merged_sketch(self, metric: str):
        items = self.sketches.get(metric)
        return sketches.merge(items) if items else None

    def merged_buckets(self, metric: str) -> buckets.BucketCounts | None:
        return merge_bucket_counts(self.buckets.get(metric) or [])


# ---------------------------------------------------------------------------------------------
# Merging hosts into one point (the materialized service rows, and the host-filtered reads)


def _scaled(p: Percentile, factor: float) -> Percentile:
    def s(v: float | None) -> float | None:
        return None if v is None else v * factor

    return Percentile(
        q=p.q,
        value=s(p.value),
        count=p.count,
        lower=s(p.lower),
        upper=s(p.upper),
        method=p.method,
        above_last_edge=s(p.above_last_edge),
        below_first_edge=s(p.below_first_edge),
    )


def distribution_percentiles(
    sketch, bc: buckets.BucketCounts | None, qs=STANDARD_QUANTILES
) -> list[Percentile]:
    """Percentiles in ms: from the sketch when request-level data exists, else the buckets."""
    if sketch is not None and sketch.count:
        return sketches.percentiles(sketch, qs)
    if bc is not None and bc.count:
        return [_scaled(p, 1000.0) for p in buckets.quantiles(bc, qs)]  # seconds -> ms
    return [Percentile(q=q, value=None, count=0, method="none") for q in qs]


def latency_percentiles(traffic: Traffic, metric: str, qs=STANDARD_QUANTILES) -> list[Percentile]:
    """Merged percentiles in ms: from sketches when request-level data exists, else buckets."""
    return distribution_percentiles(
        traffic.merged_sketch(metric), traffic.merged_buckets(metric), qs
    )


def _sum_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _mean_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


@dataclass
class HostsMerged:
    """One point over several hosts: rates and queues add, KV usage is the hosts' mean."""

    requests: int
    qps: float | None
    prompt_tps: float | None
    generation_tps: float | None
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None
    everything: Traffic  # every host's distributions, to merge
    finished: float = 0.0  # requests finished in any way, errors and aborts included
    errored: float = 0.0
    aborted: float = 0.0
    # Running requests evicted for KV-cache room (vLLM's preemptions, SGLang's retractions),
    # summed over the hosts that counted them, and the requests finished where they did; None
    # when no host counted them. finished_counting_preemptions < finished: part not counted.
    preempted: float | None = None
    finished_counting_preemptions: float | None = None

    def figures(self) -> dict[str, float | None]:
        """The figures a chart point and a service-merged row both keep, by their names."""
        return {name: getattr(self, name) for name in MERGED_FIGURES}


MERGED_FIGURES = (
    "requests", "qps", "prompt_tps", "generation_tps", "running", "waiting", "kv_cache_usage",
    "finished", "errored", "aborted", "preempted", "finished_counting_preemptions",
)  # fmt: skip


def slo_counts(by_host: dict[int, Traffic]) -> dict:
    """What SLO counts need of one period, summed over its hosts: the pushed failures, the
    engine's successes and failures, and each SLO key's exact joint count ([judged, good]),
    kept only when every host that pushed requests counted that key (else the period's count
    of it is partial, and a window holding it is not exact)."""
    pushed = [t for t in by_host.values() if t.requests]
    keys = set.intersection(*(set(t.slo_good) for t in pushed)) if pushed else set()
    good: dict[str, list[int]] = {}
    for t in by_host.values():
        for key, (judged, ok) in t.slo_good.items():
            if key in keys:
                acc = good.setdefault(key, [0, 0])
                acc[0] += judged
                acc[1] += ok
    return {
        "pushed_errors": sum(t.errors for t in by_host.values()),
        "scraped_requests": sum(t.scraped_requests for t in by_host.values()),
        "scraped_errors": sum(t.scraped_errors for t in by_host.values()),
        "slo_good": good,
    }


def merge_hosts(by_host: dict[int, Traffic]) -> HostsMerged:
    everything = Traffic()
    for traffic in by_host.values():
        everything.requests += traffic.requests
        for metric in LATENCY_METRICS:
            everything.sketches[metric] += traffic.sketches.get(metric, [])
            everything.buckets[metric] += traffic.buckets.get(metric, [])
    hosts = list(by_host.values())
    outcomes = [h.outcomes for h in hosts]
    return HostsMerged(
        finished=sum(o[0] for o in outcomes),
        errored=sum(o[1] for o in outcomes),
        aborted=sum(o[2] for o in outcomes),
        preempted=_sum_or_none([h.scraped_preemptions for h in hosts]),
        finished_counting_preemptions=_sum_or_none(
            [h.scraped_finished_counting_preemptions for h in hosts]
        ),
        requests=everything.requests,
        qps=_sum_or_none([h.qps for h in hosts]),
        prompt_tps=_sum_or_none([h.prompt_tps for h in hosts]),
        generation_tps=_sum_or_none([h.generation_tps for h in hosts]),
        running=_sum_or_none([h.gauge_mean("running") for h in hosts]),
        waiting=_sum_or_none([h.gauge_mean("waiting") for h in hosts]),
        kv_cache_usage=_mean_or_none([h.gauge_mean("kv_cache") for h in hosts]),
        everything=everything,
    )


def gpu_series_values(rows: Iterable[GpuRollup]) -> dict:
    """Across GPUs (one row per GPU and period): the mean of each GPU's means and how many
    GPUs reported it, and memory high-water and total summed over the GPUs reporting both."""
    acc = {name: [0.0, 0] for name in GPU_SERIES}
    out: dict = {"gpus": 0, "gpu_mem_used": None, "gpu_mem_total": None, "gpu_mem_n": 0}
    used = total = 0
    for row in rows:
        out["gpus"] += 1
        for name in GPU_SERIES:
            value = getattr(row, f"{name}_mean")
            if value is not None:
                acc[name][0] += value
                acc[name][1] += 1
        if row.mem_used_max is not None and row.mem_total_bytes:
            used += row.mem_used_max
            total += row.mem_total_bytes
            out["gpu_mem_n"] += 1
    if out["gpu_mem_n"]:
        out["gpu_mem_used"], out["gpu_mem_total"] = used, total
    for name, (total_value, n) in acc.items():
        out[f"gpu_{name}_mean"] = total_value / n if n else None
        out[f"gpu_{name}_n"] = n
    return out


# Stored quantiles: float64 [metric (LATENCY_METRICS), quantile (STANDARD_QUANTILES), field],
# fields value, count, lower, upper, above_last_edge, method code; NaN for None. Read back with
# one np.frombuffer per row, no parsing: what keeps a month of points cheap to draw.
QUANTILE_FIELDS = ("value", "count", "lower", "upper", "above_last_edge", "method")
METHODS = ("none", "sketch", "bucket-bounded", "exact")
QUANTILES_SHAPE = (len(LATENCY_METRICS), len(STANDARD_QUANTILES), len(QUANTILE_FIELDS))


def pack_quantiles(by_metric: dict[str, list[Percentile]]) -> bytes:
    a = np.full(QUANTILES_SHAPE, np.nan)
    for m, metric in enumerate(LATENCY_METRICS):
        for i, p in enumerate(by_metric.get(metric) or []):
            a[m, i] = [
                np.nan if v is None else v
                for v in (p.value, p.count, p.lower, p.upper, p.above_last_edge)
            ] + [METHODS.index(p.method) if p.method in METHODS else 0]
    return a.astype("<f8").tobytes()


def unpack_quantiles(blob: bytes | memoryview | None) -> np.ndarray:
    if blob is None:
        return np.full(QUANTILES_SHAPE, np.nan)
    a = np.frombuffer(blob, dtype="<f8")
    if a.size == np.prod(QUANTILES_SHAPE):
        return a.reshape(QUANTILES_SHAPE)
    # A row packed before later metrics existed: its metrics are a prefix of today's list.
    per_metric = QUANTILES_SHAPE[1] * QUANTILES_SHAPE[2]
    out = np.full(QUANTILES_SHAPE, np.nan)
    known = min(a.size // per_metric, QUANTILES_SHAPE[0])
    out[:known] = a[: known * per_metric].reshape((known, *QUANTILES_SHAPE[1:]))
    return out


class StoredQuantiles:
    """Named access to packed quantiles: any array whose last axis is `QUANTILE_FIELDS` and,
    before it, `STANDARD_QUANTILES` (one metric's [quantile, field], a column of points'
    [point, quantile, field], or a whole row's [metric, quantile, field]).

    `at("p99")` narrows to one quantile; `value`, `count`, ... read one field. Figure code
    reads names, never positions, so adding a field or a quantile cannot shift what it draws.
    """

    __slots__ = ("array",)

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def field(self, name: str) -> np.ndarray:
        return self.array[..., QUANTILE_FIELDS.index(name)]

    value = property(lambda self: self.field("value"), doc="NaN where there is none.")
    count = property(lambda self: self.field("count"), doc="Requests each quantile rests on.")
    lower = property(lambda self: self.field("lower"), doc="The true value is above this.")
    upper = property(lambda self: self.field("upper"), doc="The true value is below this.")
    above_last_edge = property(
        lambda self: self.field("above_last_edge"), doc="Bucket-bounded, in +Inf: above this."
    )
    method = property(
        lambda self: self.field("method"), doc="Codes into `METHODS`; compare with `is_method`."
    )

    def is_method(self, name: str) -> np.ndarray:
        return self.method == METHODS.index(name)

    def at(self, quantile: str) -> StoredQuantiles:
        """The fields of one quantile, by its label ("p50", "p99", ...)."""
        return StoredQuantiles(self.array[..., QUANTILE_INDEX[quantile], :])

    def metric(self, metric: str) -> StoredQuantiles:
        """One latency metric of a whole row's [metric, quantile, field] array."""
        return StoredQuantiles(self.array[LATENCY_METRICS.index(metric)])


QUANTILE_INDEX = {label(q): i for i, q in enumerate(STANDARD_QUANTILES)}


def _none_if_nan(v: float) -> float | None:
    return None if v != v else v


def percentiles_from_array(a: np.ndarray) -> list[Percentile]:
    """Percentile objects of one metric's stored quantiles (a [quantile, field] array)."""
    stored = StoredQuantiles(a)
    columns = zip(
        STANDARD_QUANTILES,
        stored.value.tolist(),
        stored.count.tolist(),
        stored.lower.tolist(),
        stored.upper.tolist(),
        stored.above_last_edge.tolist(),
        stored.method.tolist(),
        strict=True,
    )
    return [
        Percentile(
            q=q,
            value=_none_if_nan(value),
            count=0 if count != count else int(count),
            lower=_none_if_nan(lower),
            upper=_none_if_nan(upper),
            method=METHODS[0 if method != method else int(method)],
            above_last_edge=_none_if_nan(above),
            # Stored as no value with bounds [0, edge]: the first bucket (see buckets).
            below_first_edge=upper if value != value and lower == 0.0 and upper == upper else None,
        )
        for q, value, count, lower, upper, above, method in columns
    ]
