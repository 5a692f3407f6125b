"""Roll-ups: raw rows -> per-minute rows -> hourly rows, recomputed, never incremented.

The task claims batches nobody has rolled up yet (SKIP LOCKED + a conditional UPDATE on the
partial `ingestbatch_todo` index, so two workers never take the same batch), then recomputes
each affected (host, minute) from the raw rows and each affected (host, hour) from the minute
rows. Recomputing makes it idempotent: a retried task or a late sample simply rewrites its
minute. Hosts are rolled up one at a time and a batch that cannot be processed is quarantined
with its reason (`IngestBatch.quarantined_at`), so one bad batch never stalls the others.

Latency distributions: request-level values go into DDSketch (ms); scraped histogram bucket
deltas are added per minute (seconds, `BucketCounts`). Both merge exactly, so hourly rows,
hosts and ranges merge without ever averaging a percentile (DESIGN.md section 4).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from analysis import buckets, sketches, slo
from analysis.percentiles import STANDARD_QUANTILES, Percentile
from collectors.models import (
    FIVE_MINUTES,
    GPU_SERIES,
    HOUR,
    LATENCY_METRICS,
    MINUTE,
    GpuRollup,
    GpuSample,
    Host,
    IngestBatch,
    RequestSample,
    ScrapeWindow,
    ServiceMergedRollup,
    ServiceRollup,
)
from dossiers.models import Service

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
# A scrape window in which any of these grew had traffic (its seconds are "busy").
FINISHED_COUNTERS = ("requests_finished", "request_errors", "request_aborts")
GAUGES = {
    "running": "requests_running",
    "waiting": "requests_waiting",
    "kv_cache": "kv_cache_usage",
}
GPU_MEANS = ("util", "mem_util", "sm_active", "sm_occupancy", "dram_active", "power")
# Minutes further apart than this are read from raw rows in separate range queries.
RANGE_GAP_MINUTES = 10
MAX_REASON_CHARS = 500

log = logging.getLogger(__name__)


def minute_start(epoch_minute: int) -> datetime:
    return datetime.fromtimestamp(epoch_minute * 60, tz=UTC)


def floor_time(ts: datetime, seconds: int) -> datetime:
    return datetime.fromtimestamp(int(ts.timestamp()) // seconds * seconds, tz=UTC)


# ---------------------------------------------------------------------------------------------
# Merging rows (shared with the selectors)


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
            "gauge_samples",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(row, name))
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


def _rollup_from_traffic(
    traffic: Traffic, *, service_id: int, host_id: int, resolution: int, start: datetime
) -> ServiceRollup:
    row = ServiceRollup(
        service_id=service_id,
        host_id=host_id,
        resolution_s=resolution,
        start=start,
        requests=traffic.requests,
        errors=traffic.errors,
        prompt_tokens=traffic.prompt_tokens,
        output_tokens=traffic.output_tokens,
        request_seconds=traffic.request_seconds,
        scraped_requests=traffic.scraped_requests,
        scraped_prompt_tokens=traffic.scraped_prompt_tokens,
        scraped_generation_tokens=traffic.scraped_generation_tokens,
        scraped_seconds=traffic.scraped_seconds,
        scraped_busy_seconds=traffic.scraped_busy_seconds,
        scraped_errors=traffic.scraped_errors,
        scraped_aborts=traffic.scraped_aborts,
        qps=traffic.qps,
        prompt_tps=traffic.prompt_tps,
        generation_tps=traffic.generation_tps,
        gauge_samples=traffic.gauge_samples,
        running_mean=traffic.gauge_mean("running"),
        waiting_mean=traffic.gauge_mean("waiting"),
        kv_cache_mean=traffic.gauge_mean("kv_cache"),
        slo_good=traffic.slo_good,
    )
    for metric in LATENCY_METRICS:
        sketch = traffic.merged_sketch(metric)
        if sketch is not None and sketch.count:
            stats = sketches.summary(sketch)
            setattr(row, f"{metric}_sketch", sketches.dumps(sketch))
            setattr(row, f"{metric}_count", int(stats["count"]))
            setattr(row, f"{metric}_sum", stats["sum"])
            setattr(row, f"{metric}_min", stats["min"])
            setattr(row, f"{metric}_max", stats["max"])
        bc = traffic.merged_buckets(metric)
        setattr(row, f"{metric}_buckets", bc.to_dict() if bc is not None and bc.count else None)
    return row


# ---------------------------------------------------------------------------------------------
# Raw rows -> one minute


def _minute_traffic(
    requests: list[tuple], windows: list[tuple], slo_keys: dict[str, dict[str, float]] | None = None
) -> Traffic:
    """Traffic for one (service, host, minute) from its raw request rows and scrape windows,
    with the exact joint good count of each latency SLO in `slo_keys` (key -> thresholds)."""
    traffic = Traffic()
    if slo_keys and requests:
        traffic.slo_good = slo.judge_requests(requests, ("ttft", "tpot", "e2e"), slo_keys)
    values: dict[str, list[float]] = {m: [] for m in LATENCY_METRICS}
    for ttft, tpot, e2e, queue, prompt, output, ok in requests:
        traffic.requests += 1
        traffic.errors += 0 if ok else 1
        traffic.prompt_tokens += prompt or 0
        traffic.output_tokens += output or 0
        for metric, value in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e), ("queue", queue)):
            if value is not None:
                values[metric].append(value)
    if requests:
        traffic.request_seconds = float(MINUTE)
    for metric, items in values.items():
        if items:
            traffic.sketches[metric].append(sketches.from_values(items))

    for seconds, counters, histograms, gauges in windows:
        traffic.scraped_seconds += seconds
        traffic.scraped_requests += counters.get("requests_finished", 0.0)
        traffic.scraped_prompt_tokens += counters.get("prompt_tokens", 0.0)
        traffic.scraped_generation_tokens += counters.get("generation_tokens", 0.0)
        traffic.scraped_errors += counters.get("request_errors", 0.0)
        traffic.scraped_aborts += counters.get("request_aborts", 0.0)
        if any(counters.get(c, 0.0) > 0 for c in FINISHED_COUNTERS):
            traffic.scraped_busy_seconds += seconds
        if gauges:
            traffic.gauge_samples += 1
            for name, canonical in GAUGES.items():
                traffic.add_gauge(name, gauges.get(canonical), 1)
        for metric, canonical in SCRAPED_HISTOGRAM.items():
            if histograms.get(canonical):
                traffic.buckets[metric].append(
                    buckets.BucketCounts.from_dict(histograms[canonical])
                )
    return traffic


def _gpu_minute(host_id: int, gpu_index: int, start: datetime, samples: list[tuple]) -> GpuRollup:
    sums = dict.fromkeys(GPU_MEANS, 0.0)
    counts = dict.fromkeys(GPU_MEANS, 0)
    mem_used_max = mem_total = temp_max = None
    name = ""
    for s_name, util, mem_util, mem_used, total, power, temp, sm_active, sm_occ, dram in samples:
        name = s_name or name
        for key, value in (
            ("util", util), ("mem_util", mem_util), ("sm_active", sm_active),
            ("sm_occupancy", sm_occ), ("dram_active", dram), ("power", power),
        ):  # fmt: skip
            if value is not None:
                sums[key] += value
                counts[key] += 1
        if mem_used is not None:
            mem_used_max = mem_used if mem_used_max is None else max(mem_used_max, mem_used)
        if total is not None:
            mem_total = total
        if temp is not None:
            temp_max = temp if temp_max is None else max(temp_max, temp)
    means = {f"{k}_mean": (sums[k] / counts[k] if counts[k] else None) for k in GPU_MEANS}
    return GpuRollup(
        host_id=host_id,
        gpu_index=gpu_index,
        resolution_s=MINUTE,
        start=start,
        samples=len(samples),
        name=name,
        mem_used_max=mem_used_max,
        mem_total_bytes=mem_total,
        temp_max=temp_max,
        **means,
    )


def merge_gpu_rows(rows: Iterable[GpuRollup]) -> dict:
    """Sample-weighted means, memory high-water mark and hottest temperature of GPU rows."""
    sums = dict.fromkeys(GPU_MEANS, 0.0)
    weights = dict.fromkeys(GPU_MEANS, 0)
    out: dict = {"samples": 0, "mem_used_max": None, "mem_total_bytes": None, "temp_max": None}
    out["name"] = ""
    for row in rows:
        out["samples"] += row.samples
        out["name"] = row.name or out["name"]
        for key in GPU_MEANS:
            value = getattr(row, f"{key}_mean")
            if value is not None:
                sums[key] += value * row.samples
                weights[key] += row.samples
        for key, pick in (("mem_used_max", max), ("temp_max", max)):
            value = getattr(row, key)
            if value is not None:
                out[key] = value if out[key] is None else pick(out[key], value)
        out["mem_total_bytes"] = row.mem_total_bytes or out["mem_total_bytes"]
    for key in GPU_MEANS:
        out[f"{key}_mean"] = sums[key] / weights[key] if weights[key] else None
    return out


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


def percentiles_from_array(a: np.ndarray) -> list[Percentile]:
    """Percentile objects of one metric's stored quantiles (a [quantile, field] array)."""
    out = []
    for q, (value, count, lower, upper, above, method) in zip(
        STANDARD_QUANTILES, a.tolist(), strict=True
    ):
        out.append(
            Percentile(
                q=q,
                value=None if value != value else value,  # NaN -> None
                count=0 if count != count else int(count),
                lower=None if lower != lower else lower,
                upper=None if upper != upper else upper,
                method=METHODS[0 if method != method else int(method)],
                above_last_edge=None if above != above else above,
                # Stored as no value with bounds [0, edge]: the first bucket (see buckets).
                below_first_edge=upper
                if value != value and lower == 0.0 and upper == upper
                else None,
            )
        )
    return out


def _merged_row(
    service_id: int, resolution: int, start: datetime, by_host: dict[int, Traffic], gpus: list
) -> ServiceMergedRollup:
    m = merge_hosts(by_host)
    row = ServiceMergedRollup(
        service_id=service_id,
        resolution_s=resolution,
        start=start,
        hosts=sorted(by_host),
        requests=m.requests,
        qps=m.qps,
        prompt_tps=m.prompt_tps,
        generation_tps=m.generation_tps,
        running=m.running,
        waiting=m.waiting,
        kv_cache_usage=m.kv_cache_usage,
        finished=m.finished,
        errored=m.errored,
        aborted=m.aborted,
        **gpu_series_values(gpus),
    )
    latency = {}
    for metric in LATENCY_METRICS:
        sketch = m.everything.merged_sketch(metric)
        bc = m.everything.merged_buckets(metric)
        if sketch is not None and sketch.count:
            setattr(row, f"{metric}_sketch", sketches.dumps(sketch))
            setattr(row, f"{metric}_count", int(sketch.count))
        if bc is not None and bc.count:
            setattr(row, f"{metric}_buckets", bc.to_dict())
        latency[metric] = distribution_percentiles(sketch, bc)
    row.quantiles = pack_quantiles(latency)
    return row


def merge_services(service_ids: Iterable[int], resolution: int, starts: list[datetime]) -> int:
    """Rewrite the service-merged rows of `service_ids` for `starts` from the per-host rows.

    Two queries to read (every host's rows of those periods, and their GPUs' rows), one
    delete and one insert. Returns the rows written.
    """
    service_ids = sorted(set(service_ids))
    if not service_ids or not starts:
        return 0
    by_key: dict[tuple[int, datetime], dict[int, Traffic]] = defaultdict(
        lambda: defaultdict(Traffic)
    )
    for row in ServiceRollup.objects.filter(
        service_id__in=service_ids, resolution_s=resolution, start__in=starts
    ):
        by_key[(row.service_id, row.start)][row.host_id].add_row(row)
    host_ids = {h for by_host in by_key.values() for h in by_host}
    gpus: dict[tuple[int, datetime], list[GpuRollup]] = defaultdict(list)
    if host_ids:
        for g in GpuRollup.objects.filter(
            host_id__in=host_ids, resolution_s=resolution, start__in=starts
        ):
            gpus[(g.host_id, g.start)].append(g)
    rows = [
        _merged_row(sid, resolution, start, by_host, [g for h in by_host for g in gpus[(h, start)]])
        for (sid, start), by_host in sorted(by_key.items())
    ]
    ServiceMergedRollup.objects.filter(
        service_id__in=service_ids, resolution_s=resolution, start__in=starts
    ).delete()
    check_finite(rows)
    ServiceMergedRollup.objects.bulk_create(rows, batch_size=200)
    return len(rows)


# ---------------------------------------------------------------------------------------------
# Recomputing a host's minutes and hours


def _clusters(minutes: list[int]) -> list[tuple[int, int]]:
    """Sorted minutes as [first, last] runs, splitting where they are far apart."""
    runs: list[tuple[int, int]] = []
    for m in sorted(set(minutes)):
        if runs and m - runs[-1][1] <= RANGE_GAP_MINUTES:
            runs[-1] = (runs[-1][0], m)
        else:
            runs.append((m, m))
    return runs


def rollup_host_minutes(*, host_id: int, minutes: Iterable[int]) -> int:
    """Recompute the host's minute rows for `minutes` (epoch minutes), then their hours.

    Returns the number of minute rows written. Holds a lock on the host row, so two workers
    re-rolling the same host take turns instead of racing on the unique constraint.
    """
    wanted = set(minutes)
    written = 0
    services: set[int] = set()
    with transaction.atomic():
        Host.objects.select_for_update().filter(pk=host_id).first()
        for first, last in _clusters(list(wanted)):
            start, end = minute_start(first), minute_start(last + 1)
            n, touched = _rollup_range(host_id, wanted, start, end)
            written += n
            services |= touched
        periods = {
            FIVE_MINUTES: sorted({minute_start(m // 5 * 5) for m in wanted}),
            HOUR: sorted({minute_start(m // 60 * 60) for m in wanted}),
        }
        for resolution, starts in periods.items():
            for start in starts:
                _rollup_period(host_id, start, resolution)
        if services:
            # Other hosts of these services may be rolled up by another worker right now:
            # merged rows are rewritten under the services' locks, taken in one order.
            list(Service.objects.select_for_update().filter(pk__in=services).order_by("pk"))
            merge_services(services, MINUTE, sorted(minute_start(m) for m in wanted))
            for resolution, starts in periods.items():
                merge_services(services, resolution, starts)
    return written


class UnprocessableRows(ValueError):
    """The roll-up computed a value it must not store (NaN or Infinity): the batch that brought
    the rows in is quarantined with this reason instead of being marked rolled up."""


def _numbers(value) -> Iterable[float]:
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers(item)


def check_finite(rows: Iterable[models.Model]) -> None:
    """Raise UnprocessableRows naming the row and field when a roll-up row holds a
    non-finite number (a float column, or inside a JSON one): dashboards, the API and the
    alert rules would all read it, and PostgreSQL would store it without complaint."""
    for row in rows:
        for column in row._meta.concrete_fields:
            if not isinstance(column, models.FloatField | models.JSONField):
                continue
            values = _numbers(getattr(row, column.attname))
            bad = next((v for v in values if not math.isfinite(v)), None)
            if bad is not None:
                raise UnprocessableRows(
                    f"{type(row).__name__}.{column.name} of {row.start:%Y-%m-%d %H:%M} "
                    f"would be {bad}: a sample's value cannot be rolled up"
                )


def _rollup_range(
    host_id: int, wanted: set[int], start: datetime, end: datetime
) -> tuple[int, set[int]]:
    """Rewrite the host's minute rows in [start, end); returns (rows, services touched)."""
    requests: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for service_id, ts, *values in RequestSample.objects.filter(
        host_id=host_id, ts__gte=start, ts__lt=end
    ).values_list(
        "service_id", "ts", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms",
        "prompt_tokens", "output_tokens", "ok",
    ):  # fmt: skip
        requests[(service_id, int(ts.timestamp()) // 60)].append(tuple(values))
    windows: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for service_id, ts, *values in ScrapeWindow.objects.filter(
        host_id=host_id, ts__gte=start, ts__lt=end
    ).values_list("service_id", "ts", "seconds", "counters", "histograms", "gauges"):
        windows[(service_id, int(ts.timestamp()) // 60)].append(tuple(values))
    gpus: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for gpu_index, ts, *values in GpuSample.objects.filter(
        host_id=host_id, ts__gte=start, ts__lt=end
    ).values_list(
        "gpu_index", "ts", "name", "util", "mem_util", "mem_used_bytes", "mem_total_bytes",
        "power_w", "temp_c", "sm_active", "sm_occupancy", "dram_active",
    ):  # fmt: skip
        gpus[(gpu_index, int(ts.timestamp()) // 60)].append(tuple(values))

    in_range = {m for m in wanted if start <= minute_start(m) < end}
    keys = _slo_keys({sid for sid, _ in requests})
    service_rows = [
        _rollup_from_traffic(
            _minute_traffic(requests.get(key, []), windows.get(key, []), keys.get(key[0])),
            service_id=key[0],
            host_id=host_id,
            resolution=MINUTE,
            start=minute_start(key[1]),
        )
        for key in sorted(set(requests) | set(windows))
        if key[1] in in_range
    ]
    gpu_rows = [
        _gpu_minute(host_id, key[0], minute_start(key[1]), rows)
        for key, rows in sorted(gpus.items())
        if key[1] in in_range
    ]
    starts = [minute_start(m) for m in in_range]
    old = ServiceRollup.objects.filter(host_id=host_id, resolution_s=MINUTE, start__in=starts)
    touched = set(old.values_list("service_id", flat=True).distinct())
    touched |= {row.service_id for row in service_rows}
    old.delete()
    GpuRollup.objects.filter(host_id=host_id, resolution_s=MINUTE, start__in=starts).delete()
    check_finite(service_rows)
    check_finite(gpu_rows)
    ServiceRollup.objects.bulk_create(service_rows, batch_size=200)
    GpuRollup.objects.bulk_create(gpu_rows, batch_size=500)
    return len(service_rows), touched


def _slo_keys(service_ids: set[int]) -> dict[int, dict[str, dict[str, float]]]:
    """Each service's latency SLOs (their P99 fields' implied one included) as key ->
    thresholds, for the exact per-request counts a minute row keeps (two queries)."""
    if not service_ids:
        return {}
    services = list(Service.objects.filter(pk__in=service_ids).prefetch_related("slos"))
    return {
        s.pk: {
            slo.objective_key(o.thresholds_ms): o.thresholds_ms
            for o in s.slo_objects()
            if o.thresholds_ms
        }
        for s in services
    }


def _rollup_period(host_id: int, hour: datetime, resolution: int) -> None:
    """Rewrite the host's `resolution` rows (5 minutes or an hour) starting at `hour`."""
    end = hour + timedelta(seconds=resolution)
    by_service: dict[int, Traffic] = defaultdict(Traffic)
    for row in ServiceRollup.objects.filter(
        host_id=host_id, resolution_s=MINUTE, start__gte=hour, start__lt=end
    ):
        by_service[row.service_id].add_row(row)
    by_gpu: dict[int, list[GpuRollup]] = defaultdict(list)
    for row in GpuRollup.objects.filter(
        host_id=host_id, resolution_s=MINUTE, start__gte=hour, start__lt=end
    ):
        by_gpu[row.gpu_index].append(row)
    ServiceRollup.objects.filter(host_id=host_id, resolution_s=resolution, start=hour).delete()
    GpuRollup.objects.filter(host_id=host_id, resolution_s=resolution, start=hour).delete()
    service_rows = [
        _rollup_from_traffic(
            traffic, service_id=service_id, host_id=host_id, resolution=resolution, start=hour
        )
        for service_id, traffic in by_service.items()
    ]
    gpu_rows = [
        GpuRollup(
            host_id=host_id, gpu_index=index, resolution_s=resolution, start=hour,
            **merge_gpu_rows(rows),
        )
        for index, rows in by_gpu.items()
    ]  # fmt: skip
    check_finite(service_rows)
    check_finite(gpu_rows)
    ServiceRollup.objects.bulk_create(service_rows)
    GpuRollup.objects.bulk_create(gpu_rows)


# ---------------------------------------------------------------------------------------------
# The work queue


@dataclass
class RollupReport:
    """What one `rollup_pending` run did: batches rolled up and batches set aside."""

    rolled_up: int = 0
    quarantined: list[tuple[int, str]] = field(default_factory=list)  # (batch pk, reason)
    hosts: int = 0


def claim_timeout() -> timedelta:
    """How long a claim is honoured: after that its batches are claimable again (the worker
    that took them died mid-roll-up; a slow one re-rolling them is harmless, roll-ups are
    recomputed under the host's lock)."""
    return timedelta(seconds=settings.PERFHUB_ROLLUP_CLAIM_TIMEOUT_S)


def _claim_batches(now: datetime, limit: int) -> uuid.UUID | None:
    """Stamp up to `limit` unclaimed batches with a new claim; None when there is nothing.

    On PostgreSQL the candidates are locked with SKIP LOCKED, so a second worker claiming at
    the same moment takes the next batches instead of queueing behind the first. Either way
    the conditional UPDATE is the claim: a batch another worker took meanwhile is skipped.
    """
    claim = uuid.uuid4()
    claimable = Q(rolled_up_at__isnull=True, quarantined_at__isnull=True) & (
        Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - claim_timeout())
    )
    with transaction.atomic():
        candidates = IngestBatch.objects.filter(claimable).order_by("id")
        if connection.features.has_select_for_update_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True)
        ids = list(candidates.values_list("id", flat=True)[:limit])
        if not ids:
            return None
        taken = IngestBatch.objects.filter(claimable, id__in=ids).update(
            claim=claim, claimed_at=now
        )
    return claim if taken else None


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_REASON_CHARS]


def rollup_claimed(claim: uuid.UUID, *, now: datetime) -> RollupReport:
    """Roll up the batches of one claim, host by host; a batch that fails is quarantined.

    Each host's minutes are recomputed in one transaction. If that fails, the host's batches
    are retried one at a time, so only the batch that cannot be processed is set aside (with
    its reason); its neighbours, and every other host, roll up as usual.
    """
    report = RollupReport()
    by_host: dict[int, list[tuple[int, list[int]]]] = defaultdict(list)
    for pk, host_id, minutes in IngestBatch.objects.filter(claim=claim).values_list(
        "pk", "host_id", "minutes"
    ):
        by_host[host_id].append((pk, list(minutes or [])))
    for host_id, batches in by_host.items():
        report.hosts += 1
        try:
            rollup_host_minutes(host_id=host_id, minutes={m for _, ms in batches for m in ms})
        except Exception:
            log.warning("roll-up of host %s failed; retrying its batches one by one", host_id)
        else:
            done = [pk for pk, _ in batches]
            IngestBatch.objects.filter(pk__in=done).update(rolled_up_at=now)
            report.rolled_up += len(done)
            continue
        for pk, minutes in batches:
            try:
                rollup_host_minutes(host_id=host_id, minutes=minutes)
            except Exception as exc:
                reason = _reason(exc)
                log.warning("batch %s of host %s quarantined: %s", pk, host_id, reason)
                IngestBatch.objects.filter(pk=pk).update(
                    quarantined_at=now, quarantine_reason=reason
                )
                report.quarantined.append((pk, reason))
            else:
                IngestBatch.objects.filter(pk=pk).update(rolled_up_at=now)
                report.rolled_up += 1
    return report


def rollup_pending(*, now: datetime | None = None, limit: int = 1000) -> int:
    """Claim batches not yet rolled up, recompute what they touched. Returns batches done."""
    return rollup_pending_report(now=now, limit=limit).rolled_up


def rollup_pending_report(*, now: datetime | None = None, limit: int = 1000) -> RollupReport:
    """`rollup_pending`, telling also which batches were quarantined and why."""
    now = now or timezone.now()
    claim = _claim_batches(now, limit)
    if claim is None:
        return RollupReport()
    return rollup_claimed(claim, now=now)


def requeue_quarantined(*, host_id: int | None = None) -> int:
    """Give quarantined batches another go (after a fix); returns how many."""
    qs = IngestBatch.objects.filter(quarantined_at__isnull=False, rolled_up_at__isnull=True)
    if host_id is not None:
        qs = qs.filter(host_id=host_id)
    return qs.update(quarantined_at=None, quarantine_reason="", claim=None, claimed_at=None)


# ---------------------------------------------------------------------------------------------
# Rebuilding the derived rows (5-minute and service-merged) from the minute and hour rows


def rebuild_derived_rollups(
    *,
    start: datetime,
    end: datetime,
    host_ids: Iterable[int] | None = None,
    five_minute: bool = True,
) -> dict[str, int]:
    """Write the 5-minute per-host rows (from minute rows) and the service-merged rows (every
    resolution) of [start, end), a day at a time. For rows rolled up before these existed
    (after upgrading), and for rows written by something other than the roll-up (seeding).
    Never reads raw rows, so it works past raw retention. Returns rows written per kind."""
    written = {"five_minute": 0, "merged": 0}
    hosts = list(host_ids) if host_ids is not None else None
    day = floor_time(start, 86400)
    while day < end:
        chunk_end = min(day + timedelta(days=1), end)
        with transaction.atomic():
            if five_minute:
                written["five_minute"] += _five_minute_rows(hosts, max(day, start), chunk_end)
            written["merged"] += _merged_rows(hosts, max(day, start), chunk_end)
        day += timedelta(days=1)
    return written


def _host_filter(hosts: list[int] | None) -> Q:
    return Q(host_id__in=hosts) if hosts is not None else Q()


def _five_minute_rows(hosts: list[int] | None, start: datetime, end: datetime) -> int:
    start = floor_time(start, FIVE_MINUTES)
    by_service: dict[tuple[int, int, datetime], Traffic] = defaultdict(Traffic)
    for row in ServiceRollup.objects.filter(
        _host_filter(hosts), resolution_s=MINUTE, start__gte=start, start__lt=end
    ):
        by_service[(row.host_id, row.service_id, floor_time(row.start, FIVE_MINUTES))].add_row(row)
    by_gpu: dict[tuple[int, int, datetime], list[GpuRollup]] = defaultdict(list)
    for row in GpuRollup.objects.filter(
        _host_filter(hosts), resolution_s=MINUTE, start__gte=start, start__lt=end
    ):
        by_gpu[(row.host_id, row.gpu_index, floor_time(row.start, FIVE_MINUTES))].append(row)
    for model in (ServiceRollup, GpuRollup):
        model.objects.filter(
            _host_filter(hosts), resolution_s=FIVE_MINUTES, start__gte=start, start__lt=end
        ).delete()
    ServiceRollup.objects.bulk_create(
        [
            _rollup_from_traffic(
                traffic, service_id=sid, host_id=hid, resolution=FIVE_MINUTES, start=t
            )
            for (hid, sid, t), traffic in by_service.items()
        ],
        batch_size=500,
    )
    GpuRollup.objects.bulk_create(
        [
            GpuRollup(host_id=hid, gpu_index=index, resolution_s=FIVE_MINUTES, start=t,
                      **merge_gpu_rows(rows))
            for (hid, index, t), rows in by_gpu.items()
        ],
        batch_size=1000,
    )  # fmt: skip
    return len(by_service)


def _merged_rows(hosts: list[int] | None, start: datetime, end: datetime) -> int:
    written = 0
    for resolution in (MINUTE, FIVE_MINUTES, HOUR):
        pairs = (
            ServiceRollup.objects.filter(
                _host_filter(hosts),
                resolution_s=resolution,
                start__gte=floor_time(start, resolution),
                start__lt=end,
            )
            .values_list("service_id", "start")
            .distinct()
        )
        starts_by_service: dict[int, set[datetime]] = defaultdict(set)
        for sid, t in pairs:
            starts_by_service[sid].add(t)
        all_starts = sorted({t for ts in starts_by_service.values() for t in ts})
        written += merge_services(starts_by_service, resolution, all_starts)
    return written
