"""Reads the rest of PerfHub uses: a service's series over a time range, from roll-ups only.

Resolution rule (the coarsest that still draws the range, DESIGN.md section 4):
    range <= 6 h  -> 1 min   (minute rows)
    range <= 2 d  -> 5 min   (minute rows merged on read: at most 576 points per host)
    longer        -> 1 h     (hourly rows; weeks and months never read minute rows)
Percentiles are never averaged: per point, sketches are merged (method "sketch", when
request-level data exists) or bucket deltas added (method "bucket-bounded"), and only then
is the percentile taken. Values in ms. Queries: one for the service rows, one for the GPU
rows, whatever the range or the number of points.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db.models import Count, Q
from django.utils import timezone

from analysis import buckets, cost, sketches
from analysis.percentiles import STANDARD_QUANTILES, Percentile
from collectors.models import (
    HOUR,
    LATENCY_METRICS,
    MINUTE,
    GpuRollup,
    Host,
    IngestBatch,
    ServiceRollup,
)
from collectors.services.rollups import Traffic, merge_gpu_rows
from dossiers.models import Service

RESOLUTIONS = (60, 300, 3600)
SERIES_LATENCY = ("e2e", "ttft", "tpot", "queue")


def resolution_for(start: datetime, end: datetime) -> int:
    span = end - start
    if span <= timedelta(hours=6):
        return 60
    if span <= timedelta(days=2):
        return 300
    return 3600


def _bucket(ts: datetime, resolution: int) -> datetime:
    return datetime.fromtimestamp(int(ts.timestamp()) // resolution * resolution, tz=UTC)


@dataclass(frozen=True)
class MetricsPoint:
    t: datetime
    requests: int  # request-level samples (pushed); scraped counts are in qps
    qps: float | None
    prompt_tps: float | None
    generation_tps: float | None
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None
    latency: dict[str, list[Percentile]]

    def to_dict(self) -> dict:
        return {
            "t": self.t.isoformat(),
            "requests": self.requests,
            "qps": self.qps,
            "prompt_tps": self.prompt_tps,
            "generation_tps": self.generation_tps,
            "running": self.running,
            "waiting": self.waiting,
            "kv_cache_usage": self.kv_cache_usage,
            "latency_ms": {m: [p.to_dict() for p in ps] for m, ps in self.latency.items()},
        }


@dataclass(frozen=True)
class GpuPoint:
    t: datetime
    host: str
    gpu_index: int
    name: str
    util: float | None
    sm_active: float | None
    sm_occupancy: float | None
    dram_active: float | None
    mem_util: float | None
    mem_used_bytes: int | None
    mem_total_bytes: int | None
    power_w: float | None

    def to_dict(self) -> dict:
        return {
            "t": self.t.isoformat(),
            "host": self.host,
            "gpu_index": self.gpu_index,
            "name": self.name,
            "util": self.util,
            "sm_active": self.sm_active,
            "sm_occupancy": self.sm_occupancy,
            "dram_active": self.dram_active,
            "mem_util": self.mem_util,
            "mem_used_bytes": self.mem_used_bytes,
            "mem_total_bytes": self.mem_total_bytes,
            "power_w": self.power_w,
        }


@dataclass(frozen=True)
class ServiceMetrics:
    service: str
    start: datetime
    end: datetime
    resolution_s: int
    hosts: list[str]
    points: list[MetricsPoint]
    overall: dict[str, list[Percentile]]  # whole-range merged percentiles per latency metric
    gpus: list[GpuPoint] = field(default_factory=list)

    @property
    def latest_gpus(self) -> list[GpuPoint]:
        """Each GPU's newest point (per host: one host's last minute may lag another's)."""
        newest: dict[tuple[str, int], GpuPoint] = {}
        for g in self.gpus:  # sorted by time, so later points win
            newest[(g.host, g.gpu_index)] = g
        return [newest[key] for key in sorted(newest)]

    def to_dict(self) -> dict:
        return {
            "service": self.service,
            "start": self.start.isoformat(),
            "end": self.end.isoformat(),
            "resolution_s": self.resolution_s,
            "hosts": self.hosts,
            "units": {"latency": "ms", "rates": "per second", "ratios": "0-1"},
            "overall_latency_ms": {m: [p.to_dict() for p in ps] for m, ps in self.overall.items()},
            "points": [p.to_dict() for p in self.points],
            "gpus": [g.to_dict() for g in self.gpus],
        }


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
    )


def latency_percentiles(traffic: Traffic, metric: str, qs=STANDARD_QUANTILES) -> list[Percentile]:
    """Merged percentiles in ms: from sketches when request-level data exists, else buckets."""
    sketch = traffic.merged_sketch(metric)
    if sketch is not None and sketch.count:
        return sketches.percentiles(sketch, qs)
    bc = traffic.merged_buckets(metric)
    if bc is not None and bc.count:
        return [_scaled(p, 1000.0) for p in buckets.quantiles(bc, qs)]  # seconds -> ms
    return [Percentile(q=q, value=None, count=0, method="none") for q in qs]


def _sum_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _mean_or_none(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _point(t: datetime, by_host: dict[int, Traffic]) -> MetricsPoint:
    # Rates and queue lengths add across hosts; KV usage is a per-host fraction: its mean.
    everything = Traffic()
    for traffic in by_host.values():
        everything.requests += traffic.requests
        for metric in LATENCY_METRICS:
            everything.sketches[metric] += traffic.sketches.get(metric, [])
            everything.buckets[metric] += traffic.buckets.get(metric, [])
    hosts = list(by_host.values())
    return MetricsPoint(
        t=t,
        requests=everything.requests,
        qps=_sum_or_none([h.qps for h in hosts]),
        prompt_tps=_sum_or_none([h.prompt_tps for h in hosts]),
        generation_tps=_sum_or_none([h.generation_tps for h in hosts]),
        running=_sum_or_none([h.gauge_mean("running") for h in hosts]),
        waiting=_sum_or_none([h.gauge_mean("waiting") for h in hosts]),
        kv_cache_usage=_mean_or_none([h.gauge_mean("kv_cache") for h in hosts]),
        latency={m: latency_percentiles(everything, m) for m in SERIES_LATENCY},
    )


def service_metrics(
    *,
    service: Service,
    start: datetime,
    end: datetime,
    hosts: list[str] | None = None,
    resolution: int | None = None,
) -> ServiceMetrics:
    """The service's series over [start, end), merged over `hosts` (names; None: all)."""
    resolution = resolution or resolution_for(start, end)
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution: one of {RESOLUTIONS}, got {resolution}")
    source = HOUR if resolution >= HOUR else MINUTE
    rows = ServiceRollup.objects.filter(
        service=service, resolution_s=source, start__gte=_bucket(start, source), start__lt=end
    )
    if hosts is not None:
        rows = rows.filter(host__name__in=hosts)
    rows = list(rows.select_related("host").order_by("start"))

    per_point: dict[datetime, dict[int, Traffic]] = defaultdict(lambda: defaultdict(Traffic))
    overall = Traffic()
    host_names: dict[int, str] = {}
    for row in rows:
        host_names[row.host_id] = row.host.name
        per_point[_bucket(row.start, resolution)][row.host_id].add_row(row)
    for by_host in per_point.values():
        for traffic in by_host.values():
            for metric in LATENCY_METRICS:
                overall.sketches[metric] += traffic.sketches.get(metric, [])
                overall.buckets[metric] += traffic.buckets.get(metric, [])
    points = [_point(t, per_point[t]) for t in sorted(per_point)]

    gpu_hosts = Q(host__name__in=hosts) if hosts is not None else Q(host_id__in=list(host_names))
    gpus = _gpu_points(gpu_hosts, source, resolution, _bucket(start, source), end)
    return ServiceMetrics(
        service=service.slug,
        start=start,
        end=end,
        resolution_s=resolution,
        hosts=sorted(set(host_names.values()) | {g.host for g in gpus}),
        points=points,
        overall={m: latency_percentiles(overall, m) for m in SERIES_LATENCY},
        gpus=gpus,
    )


def _gpu_points(
    hosts: Q, source: int, resolution: int, start: datetime, end: datetime
) -> list[GpuPoint]:
    grouped: dict[tuple[datetime, str, int], list[GpuRollup]] = defaultdict(list)
    for row in GpuRollup.objects.filter(
        hosts, resolution_s=source, start__gte=start, start__lt=end
    ).select_related("host"):
        grouped[(_bucket(row.start, resolution), row.host.name, row.gpu_index)].append(row)
    points = []
    for (t, host, index), items in sorted(grouped.items()):
        merged = merge_gpu_rows(items)
        points.append(
            GpuPoint(
                t=t,
                host=host,
                gpu_index=index,
                name=merged["name"],
                util=merged["util_mean"],
                sm_active=merged["sm_active_mean"],
                sm_occupancy=merged["sm_occupancy_mean"],
                dram_active=merged["dram_active_mean"],
                mem_util=merged["mem_util_mean"],
                mem_used_bytes=merged["mem_used_max"],
                mem_total_bytes=merged["mem_total_bytes"],
                power_w=merged["power_mean"],
            )
        )
    return points


# ---------------------------------------------------------------------------------------------
# Pages


@dataclass(frozen=True)
class LiveEconomics:
    window_minutes: int
    tokens_per_second: float
    basis: str  # which tokens count: "output" or "total"
    economics: cost.Economics


def live_economics(
    *, service: Service, now: datetime | None = None, minutes: int = 15
) -> LiveEconomics | None:
    """Cost per Mtok at the measured token rate of the last `minutes` (allocation basis).

    The rate is the whole fleet's (all hosts), so it is costed against all the service's GPUs.
    None when nothing was measured.
    """
    now = now or timezone.now()
    metrics = service_metrics(
        service=service, start=now - timedelta(minutes=minutes), end=now, resolution=60
    )
    rates = []
    for p in metrics.points:
        if p.generation_tps is None:
            continue
        total = p.generation_tps + (p.prompt_tps or 0.0)
        rates.append(total if service.token_basis == Service.TokenBasis.TOTAL else p.generation_tps)
    if not rates or sum(rates) <= 0:
        return None
    tps = sum(rates) / len(rates)
    busy = [g.util for g in metrics.gpus if g.util is not None]
    return LiveEconomics(
        window_minutes=minutes,
        tokens_per_second=tps,
        basis=service.token_basis,
        economics=service.economics(
            tokens_per_second=tps,
            gpus=service.total_gpus,
            busy_fraction=sum(busy) / len(busy) if busy else None,
        ),
    )


def hosts_overview() -> list[Host]:
    """Every host with its pull target's service, for the hosts page (one query)."""
    return list(Host.objects.select_related("pull_service").order_by("name"))


# The hosts page lists the services a host reported within this window (from hourly rows).
HOST_SERVICES_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class HostService:
    slug: str
    name: str


@dataclass(frozen=True)
class HostRow:
    host: Host
    health: str
    health_label: str
    health_detail: str
    services: list[HostService]  # the pull target, then what it reported, by name
    quarantined: int = 0  # batches the roll-up set aside (see `host_quarantine`)


def quarantine_counts() -> dict[int, int]:
    """Quarantined batches per host id (one query, on the partial quarantine index)."""
    return dict(
        IngestBatch.objects.filter(quarantined_at__isnull=False)
        .values_list("host_id")
        .annotate(n=Count("id"))
        .values_list("host_id", "n")
    )


def host_rows(*, now: datetime) -> list[HostRow]:
    """Every host with its health at `now` and its services, for the hosts page (three queries:
    the hosts, the (host, service) pairs of the last HOST_SERVICES_WINDOW's hourly rows, and
    the quarantined batch counts)."""
    quarantined = quarantine_counts()
    reported: dict[int, dict[str, HostService]] = defaultdict(dict)
    for host_id, slug, name in (
        ServiceRollup.objects.filter(resolution_s=HOUR, start__gte=now - HOST_SERVICES_WINDOW)
        .values_list("host_id", "service__slug", "service__name")
        .distinct()
    ):
        reported[host_id][slug] = HostService(slug=slug, name=name)
    rows = []
    for host in hosts_overview():
        services = sorted(reported[host.pk].values(), key=lambda s: s.name)
        if host.pull_service is not None:
            target = HostService(slug=host.pull_service.slug, name=host.pull_service.name)
            services = [target] + [s for s in services if s.slug != target.slug]
        health = host.health(now)
        rows.append(
            HostRow(
                host=host,
                health=health.value,
                health_label=health.label,
                health_detail=host.health_detail(now),
                services=services,
                quarantined=quarantined.get(host.pk, 0),
            )
        )
    return rows


@dataclass(frozen=True)
class HostQuarantine:
    count: int
    batches: list[IngestBatch]  # the newest, at most `limit`


def host_quarantine(*, host: Host, limit: int = 50) -> HostQuarantine:
    """The host's quarantined batches, newest first, with their reasons (two queries)."""
    qs = IngestBatch.objects.filter(host=host, quarantined_at__isnull=False)
    batches = list(
        qs.order_by("-quarantined_at", "-id").only(
            "id", "batch_id", "host_id", "received_at", "counts", "quarantined_at",
            "quarantine_reason",
        )[:limit]
    )  # fmt: skip
    return HostQuarantine(count=qs.count(), batches=batches)


def latest_minutes(*, service: Service, limit: int = 30) -> list[ServiceRollup]:
    """The newest per-host minute rows of the service (for the live table), one query."""
    return list(
        ServiceRollup.objects.filter(service=service, resolution_s=MINUTE)
        .select_related("host")
        .defer(*[f"{m}_sketch" for m in LATENCY_METRICS])
        .order_by("-start", "host__name")[:limit]
    )
