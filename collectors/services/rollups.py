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
import uuid
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from analysis import buckets, sketches
from collectors.models import (
    HOUR,
    LATENCY_METRICS,
    MINUTE,
    GpuRollup,
    GpuSample,
    Host,
    IngestBatch,
    RequestSample,
    ScrapeWindow,
    ServiceRollup,
)

# Which scraped histogram stands for which latency (ITL is what engines expose for TPOT).
SCRAPED_HISTOGRAM = {
    "e2e": "e2e_seconds",
    "ttft": "ttft_seconds",
    "tpot": "itl_seconds",
    "queue": "queue_seconds",
}
GAUGES = {
    "running": "requests_running",
    "waiting": "requests_waiting",
    "kv_cache": "kv_cache_usage",
}
GPU_MEANS = ("util", "mem_util", "sm_active", "sm_occupancy", "dram_active", "power")
CLAIM_TIMEOUT = timedelta(minutes=10)
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
    gauge_samples: int = 0
    gauge_weighted: dict[str, list[float]] = field(default_factory=dict)  # name -> [sum, weight]
    sketches: dict[str, list] = field(default_factory=lambda: defaultdict(list))
    buckets: dict[str, list] = field(default_factory=lambda: defaultdict(list))

    def add_row(self, row: ServiceRollup) -> None:
        for name in (
            "requests", "errors", "prompt_tokens", "output_tokens", "request_seconds",
            "scraped_requests", "scraped_prompt_tokens", "scraped_generation_tokens",
            "scraped_seconds", "gauge_samples",
        ):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(row, name))
        for name in GAUGES:
            self.add_gauge(name, getattr(row, f"{name}_mean"), row.gauge_samples)
        for metric in LATENCY_METRICS:
            blob = getattr(row, f"{metric}_sketch")
            if blob is not None and getattr(row, f"{metric}_count"):
                self.sketches[metric].append(sketches.loads(bytes(blob)))
            data = getattr(row, f"{metric}_buckets")
            if data:
                self.buckets[metric].append(buckets.BucketCounts.from_dict(data))

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
    def qps(self) -> float | None:
        return self._rate(self.scraped_requests, self.requests)

    @property
    def prompt_tps(self) -> float | None:
        return self._rate(self.scraped_prompt_tokens, self.prompt_tokens)

    @property
    def generation_tps(self) -> float | None:
        return self._rate(self.scraped_generation_tokens, self.output_tokens)

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
        qps=traffic.qps,
        prompt_tps=traffic.prompt_tps,
        generation_tps=traffic.generation_tps,
        gauge_samples=traffic.gauge_samples,
        running_mean=traffic.gauge_mean("running"),
        waiting_mean=traffic.gauge_mean("waiting"),
        kv_cache_mean=traffic.gauge_mean("kv_cache"),
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


def _minute_traffic(requests: list[tuple], windows: list[tuple]) -> Traffic:
    """Traffic for one (service, host, minute) from its raw request rows and scrape windows."""
    traffic = Traffic()
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
    with transaction.atomic():
        Host.objects.select_for_update().filter(pk=host_id).first()
        for first, last in _clusters(list(wanted)):
            start, end = minute_start(first), minute_start(last + 1)
            written += _rollup_range(host_id, wanted, start, end)
        hours = sorted({m // 60 for m in wanted})
        for hour in hours:
            _rollup_hour(host_id, minute_start(hour * 60))
    return written


def _rollup_range(host_id: int, wanted: set[int], start: datetime, end: datetime) -> int:
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
    service_rows = [
        _rollup_from_traffic(
            _minute_traffic(requests.get(key, []), windows.get(key, [])),
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
    ServiceRollup.objects.filter(host_id=host_id, resolution_s=MINUTE, start__in=starts).delete()
    GpuRollup.objects.filter(host_id=host_id, resolution_s=MINUTE, start__in=starts).delete()
    ServiceRollup.objects.bulk_create(service_rows, batch_size=200)
    GpuRollup.objects.bulk_create(gpu_rows, batch_size=500)
    return len(service_rows)


def _rollup_hour(host_id: int, hour: datetime) -> None:
    end = hour + timedelta(hours=1)
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
    ServiceRollup.objects.filter(host_id=host_id, resolution_s=HOUR, start=hour).delete()
    GpuRollup.objects.filter(host_id=host_id, resolution_s=HOUR, start=hour).delete()
    ServiceRollup.objects.bulk_create(
        [
            _rollup_from_traffic(
                traffic, service_id=service_id, host_id=host_id, resolution=HOUR, start=hour
            )
            for service_id, traffic in by_service.items()
        ]
    )
    GpuRollup.objects.bulk_create(
        [
            GpuRollup(
                host_id=host_id, gpu_index=index, resolution_s=HOUR, start=hour,
                **merge_gpu_rows(rows),
            )
            for index, rows in by_gpu.items()
        ]
    )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The work queue


@dataclass
class RollupReport:
    """What one `rollup_pending` run did: batches rolled up and batches set aside."""

    rolled_up: int = 0
    quarantined: list[tuple[int, str]] = field(default_factory=list)  # (batch pk, reason)
    hosts: int = 0


def _claim_batches(now: datetime, limit: int) -> uuid.UUID | None:
    """Stamp up to `limit` unclaimed batches with a new claim; None when there is nothing.

    On PostgreSQL the candidates are locked with SKIP LOCKED, so a second worker claiming at
    the same moment takes the next batches instead of queueing behind the first. Either way
    the conditional UPDATE is the claim: a batch another worker took meanwhile is skipped.
    """
    claim = uuid.uuid4()
    claimable = Q(rolled_up_at__isnull=True, quarantined_at__isnull=True) & (
        Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - CLAIM_TIMEOUT)
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
