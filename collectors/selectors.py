"""Reads the rest of PerfHub uses: a service's series over a time range, from roll-ups only.

Resolution rule (the coarsest that still draws the range, docs/architecture.md):
    range <= 6 h  -> 1 min   (minute rows)
    range <= 2 d  -> 5 min   (5-minute rows: at most 576 points)
    longer        -> 1 h     (hourly rows; weeks and months never read minute rows)
Every resolution is written at roll-up time, per host and merged over the service's hosts
(`ServiceMergedRollup`, with the standard quantiles beside the merged distributions), so a
page reads one row per point: one query whatever the range or the number of hosts.
Percentiles are never averaged: sketches are merged (method "sketch", when request-level data
exists) or bucket deltas added (method "bucket-bounded"), and only then is the percentile
taken. Values in ms.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import numpy as np
from django.db.models import Q

from analysis import buckets, sketches
from analysis.percentiles import STANDARD_QUANTILES, Percentile
from collectors.distributions import (
    QUANTILE_FIELDS,
    OutcomeRates,
    StoredQuantiles,
    Traffic,
    latency_percentiles,
    merge_hosts,
    pack_quantiles,
    percentiles_from_array,
    unpack_quantiles,
)
from collectors.models import (
    GPU_SERIES,
    LATENCY_METRICS,
    MINUTE,
    GpuRollup,
    Host,
    ServiceMergedRollup,
    ServiceRollup,
)
from dossiers.models import GpuSource, Service

RESOLUTIONS = (60, 300, 3600)
SERIES_LATENCY = LATENCY_METRICS


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
class MetricsPoint(OutcomeRates):
    t: datetime
    requests: int  # request-level samples (pushed); scraped counts are in qps
    qps: float | None
    prompt_tps: float | None
    generation_tps: float | None
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None
    latency: Mapping[str, list[Percentile]]
    finished: float = 0.0  # requests finished in any way (errors and aborts included)
    errored: float = 0.0
    aborted: float = 0.0
    # Running requests evicted for KV-cache room (vLLM's preemptions, SGLang's retractions),
    # over the hosts whose engine counts them, and the requests finished there: None when no
    # host's engine counted them ("not counted", not 0); finished_counting_preemptions below
    # finished when some hosts' engines did not.
    preempted: float | None = None
    finished_counting_preemptions: float | None = None

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
            "finished": self.finished,
            "errored": self.errored,
            "aborted": self.aborted,
            "error_rate": self.error_rate,
            "preempted": self.preempted,
            "finished_counting_preemptions": self.finished_counting_preemptions,
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
class GpuSeriesPoint:
    """The service's GPUs at one point: each series' mean over GPUs and how many reported."""

    t: datetime
    gpus: int
    means: dict[str, float | None]  # GPU_SERIES name -> mean over GPUs (0-1, W for power)
    counts: dict[str, int]
    mem_used_bytes: int | None  # summed over the GPUs reporting used and total
    mem_total_bytes: int | None
    mem_gpus: int


class ServiceMetrics:
    """A service's series over a range. `points` and `gpu_series` are what pages draw; the
    whole-range percentiles (`overall`), the per-GPU points (`gpus`) and the host names are
    read on first use only, so a page that does not show them does not pay for them."""

    def __init__(
        self,
        *,
        service: str,
        start: datetime,
        end: datetime,
        resolution_s: int,
        points: list[MetricsPoint],
        gpu_series: list[GpuSeriesPoint] | None = None,
        hosts: list[str] | Callable[[], list[str]] = (),
        overall: dict[str, list[Percentile]] | Callable[[], dict] | None = None,
        gpus: list[GpuPoint] | Callable[[], list[GpuPoint]] = (),
    ) -> None:
        self.service, self.start, self.end = service, start, end
        self.resolution_s = resolution_s
        self.points = points
        self._loaders = {"hosts": hosts, "overall": overall or {}, "gpus": gpus}
        self._loaded: dict = {}
        self.gpu_series = gpu_series if gpu_series is not None else _series_of(self.gpus)

    def _get(self, name: str):
        if name not in self._loaded:
            value = self._loaders[name]
            self._loaded[name] = value() if callable(value) else value
        return self._loaded[name]

    @property
    def hosts(self) -> list[str]:
        return list(self._get("hosts"))

    def quantile_columns(self, metric: str) -> StoredQuantiles:
        """The points' stored quantiles of `metric` as one array [point, quantile, field],
        read by name (`.at("p99").value`; NaN for none): what charts draw, without objects."""
        key = f"q:{metric}"
        if key not in self._loaded:
            arrays = [
                p.latency.stored.metric(metric).array
                if isinstance(p.latency, StoredLatency)
                else StoredQuantiles(unpack_quantiles(pack_quantiles({metric: p.latency[metric]})))
                .metric(metric)
                .array
                for p in self.points
            ]
            shape = (0, len(STANDARD_QUANTILES), len(QUANTILE_FIELDS))
            self._loaded[key] = StoredQuantiles(np.stack(arrays) if arrays else np.empty(shape))
        return self._loaded[key]

    @property
    def x_array(self) -> np.ndarray:
        """The points' times as one datetime64 array (naive UTC, what plotly.js reads): a
        numeric column, cheap for Plotly to validate and copy, unlike strings."""
        if "x" not in self._loaded:
            seconds = [int(p.t.timestamp()) for p in self.points]
            self._loaded["x"] = np.array(seconds, dtype="datetime64[s]")
        return self._loaded["x"]

    @property
    def overall(self) -> dict[str, list[Percentile]]:
        """Whole-range merged percentiles per latency metric."""
        return self._get("overall")

    @property
    def gpus(self) -> list[GpuPoint]:
        return list(self._get("gpus"))

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


def _series_of(gpus: list[GpuPoint]) -> list[GpuSeriesPoint]:
    """GPU series from per-GPU points (the host-filtered path and hand-built metrics)."""
    by_t: dict[datetime, list[GpuPoint]] = defaultdict(list)
    for g in gpus:
        by_t[g.t].append(g)
    out = []
    for t in sorted(by_t):
        items = by_t[t]
        means, counts = {}, {}
        for name in GPU_SERIES:
            attr = "power_w" if name == "power" else name
            values = [getattr(g, attr) for g in items if getattr(g, attr) is not None]
            means[name] = sum(values) / len(values) if values else None
            counts[name] = len(values)
        mem = [(g.mem_used_bytes, g.mem_total_bytes) for g in items
               if g.mem_used_bytes is not None and g.mem_total_bytes]  # fmt: skip
        out.append(
            GpuSeriesPoint(
                t=t, gpus=len(items), means=means, counts=counts,
                mem_used_bytes=sum(u for u, _ in mem) if mem else None,
                mem_total_bytes=sum(v for _, v in mem) if mem else None, mem_gpus=len(mem),
            )
        )  # fmt: skip
    return out


def _point(t: datetime, by_host: dict[int, Traffic]) -> MetricsPoint:
    m = merge_hosts(by_host)
    return MetricsPoint(
        t=t,
        latency={metric: latency_percentiles(m.everything, metric) for metric in SERIES_LATENCY},
        **m.figures(),
    )


def _no_percentiles() -> list[Percentile]:
    return [Percentile(q=q, value=None, count=0, method="none") for q in STANDARD_QUANTILES]


POINT_COLUMNS = (
    "start", "quantiles", "requests", "qps", "prompt_tps", "generation_tps", "running",
    "waiting", "kv_cache_usage", "finished", "errored", "aborted", "preempted",
    "finished_counting_preemptions", "gpus",
    "gpu_mem_used", "gpu_mem_total", "gpu_mem_n",
    *[f"gpu_{name}_{kind}" for name in GPU_SERIES for kind in ("mean", "n")],
)  # fmt: skip
_GPU_AT = POINT_COLUMNS.index("gpus")


class StoredLatency(Mapping):
    """A merged row's stored quantiles as {metric: [Percentile]}, built on first access."""

    def __init__(self, array: np.ndarray) -> None:
        self.stored = StoredQuantiles(array)
        self._built: dict[str, list[Percentile]] = {}

    def __getitem__(self, metric: str) -> list[Percentile]:
        if metric not in self._built:
            self._built[metric] = percentiles_from_array(self.stored.metric(metric).array)
        return self._built[metric]

    def __iter__(self):
        return iter(SERIES_LATENCY)

    def __len__(self) -> int:
        return len(SERIES_LATENCY)


def _merged_point(row: tuple) -> MetricsPoint:
    """A point from a merged row's columns (POINT_COLUMNS): no model instance, no parsing."""
    latency = StoredLatency(unpack_quantiles(row[1]))
    return MetricsPoint(
        row[0], row[2], row[3], row[4], row[5], row[6], row[7], row[8], latency,
        row[9], row[10], row[11], row[12], row[13],
    )  # fmt: skip


def _merged_gpu_point(row: tuple) -> GpuSeriesPoint:
    gpus, used, total, n, *series = row[_GPU_AT:]
    return GpuSeriesPoint(
        t=row[0],
        gpus=gpus,
        means={name: series[2 * i] for i, name in enumerate(GPU_SERIES)},
        counts={name: series[2 * i + 1] for i, name in enumerate(GPU_SERIES)},
        mem_used_bytes=used,
        mem_total_bytes=total,
        mem_gpus=n,
    )


DISTRIBUTION_COLUMNS = [f"{m}_{kind}" for m in LATENCY_METRICS for kind in ("sketch", "buckets")]


def service_metrics(
    *,
    service: Service,
    start: datetime,
    end: datetime,
    hosts: list[str] | None = None,
    resolution: int | None = None,
) -> ServiceMetrics:
    """The service's series over [start, end), merged over `hosts` (names; None: all).

    All hosts: one query of the service-merged rows written at roll-up time (one row per
    point, whatever the number of hosts). Some hosts: one query of those hosts' rows at the
    point resolution, merged per point, one of their GPUs' rows and one of their names.
    """
    resolution = resolution or resolution_for(start, end)
    if resolution not in RESOLUTIONS:
        raise ValueError(f"resolution: one of {RESOLUTIONS}, got {resolution}")
    floor = _bucket(start, resolution)
    if hosts is None:
        return _all_hosts_metrics(service, start, end, floor, resolution)

    rows = list(
        ServiceRollup.objects.filter(
            service=service,
            resolution_s=resolution,
            start__gte=floor,
            start__lt=end,
            host__name__in=hosts,
        ).order_by("start")
    )
    per_point: dict[datetime, dict[int, Traffic]] = defaultdict(lambda: defaultdict(Traffic))
    for row in rows:
        per_point[row.start][row.host_id].add_row(row)
    points = [_point(t, per_point[t]) for t in sorted(per_point)]
    gpus = _gpu_points(Q(host__name__in=hosts), resolution, floor, end)

    def overall() -> dict[str, list[Percentile]]:
        everything = Traffic()
        for by_host in per_point.values():
            for traffic in by_host.values():
                for metric in LATENCY_METRICS:
                    everything.sketches[metric] += traffic.sketches.get(metric, [])
                    everything.buckets[metric] += traffic.buckets.get(metric, [])
        return {m: latency_percentiles(everything, m) for m in SERIES_LATENCY}

    host_names = dict(Host.objects.filter(name__in=hosts).values_list("pk", "name"))
    seen = {host_names[r.host_id] for r in rows if r.host_id in host_names}
    return ServiceMetrics(
        service=service.slug,
        start=start,
        end=end,
        resolution_s=resolution,
        hosts=sorted(seen | {g.host for g in gpus}),
        points=points,
        overall=overall,
        gpus=gpus,
    )


def merged_points(service: Service, resolution: int, floor: datetime, end: datetime):
    """The service-merged rows in [floor, end) in time order, as POINT_COLUMNS tuples.

    LIMIT the number of buckets in the range (rows are unique per bucket, so it cuts
    nothing): it tells the planner how few rows match. Without it, when one service has
    far more rows than the average (its minute rows, say) the planner expects tens of
    thousands, and at 2,000 services picked a parallel bitmap scan, a sort and JIT: 50-90 ms
    where the ordered index scan takes 1.5 ms.
    """
    buckets = math.ceil((end - floor) / timedelta(seconds=resolution))
    return (
        ServiceMergedRollup.objects.filter(
            service=service, resolution_s=resolution, start__gte=floor, start__lt=end
        )
        .order_by("start")
        .values_list(*POINT_COLUMNS)[: max(buckets, 0)]
    )


def _all_hosts_metrics(
    service: Service, start: datetime, end: datetime, floor: datetime, resolution: int
) -> ServiceMetrics:
    merged = ServiceMergedRollup.objects.filter(
        service=service, resolution_s=resolution, start__gte=floor, start__lt=end
    )
    rows = list(merged_points(service, resolution, floor, end))
    # The hosts that served the service in the range, as a subquery (read only when needed).
    served = ServiceRollup.objects.filter(
        service=service, resolution_s=resolution, start__gte=floor, start__lt=end
    ).values("host_id")

    def overall() -> dict[str, list[Percentile]]:
        everything = Traffic()
        for row in merged.only("id", *DISTRIBUTION_COLUMNS):
            for metric in LATENCY_METRICS:
                blob = getattr(row, f"{metric}_sketch")
                if blob is not None:
                    everything.sketches[metric].append(sketches.loads(bytes(blob)))
                data = getattr(row, f"{metric}_buckets")
                if data:
                    everything.buckets[metric].append(buckets.BucketCounts.from_dict(data))
        return {m: latency_percentiles(everything, m) for m in SERIES_LATENCY}

    def hosts() -> list[str]:
        return list(
            Host.objects.filter(pk__in=served).order_by("name").values_list("name", flat=True)
        )

    return ServiceMetrics(
        service=service.slug,
        start=start,
        end=end,
        resolution_s=resolution,
        hosts=hosts,
        points=[_merged_point(row) for row in rows],
        gpu_series=[_merged_gpu_point(row) for row in rows if row[_GPU_AT]],
        overall=overall,
        gpus=lambda: _gpu_points(Q(host_id__in=served), resolution, floor, end),
    )


def _gpu_points(hosts: Q, resolution: int, start: datetime, end: datetime) -> list[GpuPoint]:
    """Per-GPU points from the GPU rows at the point resolution (one row per GPU and point)."""
    return [
        GpuPoint(
            t=row.start,
            host=row.host.name,
            gpu_index=row.gpu_index,
            name=row.name,
            util=row.util_mean,
            sm_active=row.sm_active_mean,
            sm_occupancy=row.sm_occupancy_mean,
            dram_active=row.dram_active_mean,
            mem_util=row.mem_util_mean,
            mem_used_bytes=row.mem_used_max,
            mem_total_bytes=row.mem_total_bytes,
            power_w=row.power_mean,
        )
        for row in GpuRollup.objects.filter(
            hosts, resolution_s=resolution, start__gte=start, start__lt=end
        )
        .select_related("host")
        .order_by("start", "host__name", "gpu_index")
    ]


def gpu_source_of_hosts(host_ids: Iterable[int]) -> str:
    """Where these hosts' GPU figures were measured, as a run's `gpu_source` ("" if none
    reports GPUs): a host pulled from dcgm-exporter, directly or through a Prometheus source,
    reads DCGM's; a host with the PerfHub agent (pushing, or pulled as "agent") reads NVML. A
    host pulled from an engine's /metrics has no GPU series and says nothing."""
    found = set()
    rows = Host.objects.filter(pk__in=list(host_ids)).values_list(
        "pull_url", "pull_kind", "prometheus_source"
    )
    for pull_url, pull_kind, prometheus in rows:
        if prometheus is not None or pull_kind == "dcgm":
            found.add(GpuSource.DCGM)
        elif not pull_url or pull_kind == Host.PULL_AGENT:
            found.add(GpuSource.NVML)
    if len(found) > 1:
        return GpuSource.NVML_DCGM
    return found.pop() if found else ""


def latest_minutes(*, service: Service, limit: int = 30) -> list[ServiceRollup]:
    """The newest per-host minute rows of the service (for the live table), one query."""
    return list(
        ServiceRollup.objects.filter(service=service, resolution_s=MINUTE)
        .select_related("host")
        .defer(*[f"{m}_sketch" for m in LATENCY_METRICS])
        .order_by("-start", "host__name")[:limit]
    )
