"""The one place alerts read collectors' and dossiers' data, batched over many services.

Evaluation reads every service with a rule in a few queries per distinct window length (not
per service), so 1,000 services fit in one evaluation interval (DESIGN.md section 8).

`collectors.selectors.service_metrics` reads one service; alerts need the same numbers for
every service at once, so the reads here are read-only queries on collectors' 1-minute roll-up
rows (never raw samples), fetching only the columns a rule needs, and merging with collectors'
own `Traffic` and `latency_percentiles`: sketches merged bin for bin, scraped bucket deltas
added, the P99 taken from the merge.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Max

from analysis import buckets, sketches
from analysis.percentiles import LATENCY_METRICS, Percentile
from collectors.models import MINUTE, GpuRollup, PrometheusSource, ServiceRollup
from collectors.selectors import latency_percentiles
from collectors.services.rollups import Traffic
from dossiers.models import Baseline, Service

ADDITIVE = (
    "requests", "prompt_tokens", "output_tokens", "request_seconds", "scraped_requests",
    "scraped_prompt_tokens", "scraped_generation_tokens", "scraped_seconds", "gauge_samples",
)  # fmt: skip


@dataclass
class ServiceWindow:
    """One service over one closed window, merged over its hosts."""

    service_id: int
    seconds: float
    requests: float = 0.0
    output_tokens: float = 0.0
    prompt_tokens: float = 0.0
    latency: dict[str, Percentile] = field(default_factory=dict)  # metric -> P99 (ms)
    percentiles: dict[str, dict[float, Percentile]] = field(default_factory=dict)  # metric, q
    gauge_samples: int = 0
    waiting_mean: float | None = None
    kv_cache_mean: float | None = None
    gpu_samples: int = 0
    gpu_util: float | None = None
    sm_active: float | None = None
    host_ids: set[int] = field(default_factory=set)

    def tokens_per_second(self, basis: str) -> float:
        tokens = self.output_tokens + (self.prompt_tokens if basis == "total" else 0.0)
        return tokens / self.seconds if self.seconds else 0.0


def _weighted_mean(pairs: Iterable[tuple[float | None, float]]) -> float | None:
    total = weight = 0.0
    for value, w in pairs:
        if value is None or not w:
            continue
        total += value * w
        weight += w
    return total / weight if weight else None


def service_windows(
    service_ids: Iterable[int],
    start: datetime,
    end: datetime,
    *,
    metrics: Iterable[str] = LATENCY_METRICS,
    gpu: bool = True,
    quantiles: Sequence[float] = (0.99,),
) -> dict[int, ServiceWindow]:
    """Every listed service's merged window `[start, end)` from 1-minute roll-ups: 2 queries.

    Only the distributions of `metrics` are read (a cost rule over an hour reads no sketch),
    and GPU roll-ups only with `gpu` (the bulk of the rows; only GPU rules need them).
    Services without a roll-up row in the window are absent from the result (no data).
    """
    ids = list(service_ids)
    metrics = [m for m in metrics if m in LATENCY_METRICS]
    seconds = (end - start).total_seconds()
    columns = ["service_id", "host_id", *ADDITIVE, "waiting_mean", "kv_cache_mean"]
    for m in metrics:
        columns += [f"{m}_count", f"{m}_sketch", f"{m}_buckets"]
    rows = ServiceRollup.objects.filter(
        service_id__in=ids, resolution_s=MINUTE, start__gte=start, start__lt=end
    ).values_list(*columns)

    # Per service and host, the additive traffic (collectors' own merge type); distributions
    # per service, merged over hosts and minutes and only then read (never averaged).
    per_host: dict[int, dict[int, Traffic]] = defaultdict(lambda: defaultdict(Traffic))
    merged: dict[int, Traffic] = defaultdict(Traffic)
    for row in rows:
        r = dict(zip(columns, row, strict=True))
        traffic = per_host[r["service_id"]][r["host_id"]]
        for name in ADDITIVE:
            setattr(traffic, name, getattr(traffic, name) + r[name])
        traffic.add_gauge("waiting", r["waiting_mean"], r["gauge_samples"])
        traffic.add_gauge("kv_cache", r["kv_cache_mean"], r["gauge_samples"])
        everything = merged[r["service_id"]]
        for m in metrics:
            if r[f"{m}_sketch"] is not None and r[f"{m}_count"]:
                everything.sketches[m].append(sketches.loads(bytes(r[f"{m}_sketch"])))
            if r[f"{m}_buckets"]:
                everything.buckets[m].append(buckets.BucketCounts.from_dict(r[f"{m}_buckets"]))

    out: dict[int, ServiceWindow] = {}
    for sid, hosts in per_host.items():
        w = out[sid] = ServiceWindow(service_id=sid, seconds=seconds, host_ids=set(hosts))
        for t in hosts.values():
            # Engine counters see every request; pushed requests may be a sample.
            w.requests += t.scraped_requests if t.scraped_seconds > 0 else t.requests
            w.output_tokens += (t.generation_tps or 0.0) * seconds
            w.prompt_tokens += (t.prompt_tps or 0.0) * seconds
            w.gauge_samples += t.gauge_samples
        # A queue is per host: the service's queue is the sum of its hosts' mean queues;
        # KV cache usage is a per-host fraction: the mean over hosts.
        waiting = [t.gauge_mean("waiting") for t in hosts.values()]
        kv = [t.gauge_mean("kv_cache") for t in hosts.values()]
        w.waiting_mean = (
            sum(v for v in waiting if v is not None)
            if any(v is not None for v in waiting)
            else None
        )
        kv_known = [v for v in kv if v is not None]
        w.kv_cache_mean = sum(kv_known) / len(kv_known) if kv_known else None
        qs = sorted({0.99, *quantiles})
        for m in metrics:
            w.percentiles[m] = {p.q: p for p in latency_percentiles(merged[sid], m, qs)}
            w.latency[m] = w.percentiles[m][0.99]
    if gpu:
        _add_gpu(out, start, end)
    return out


def _add_gpu(windows: dict[int, ServiceWindow], start: datetime, end: datetime) -> None:
    """GPU utilization and SM active of the hosts serving each service in the window: 1 query."""
    host_ids = {h for w in windows.values() for h in w.host_ids}
    if not host_ids:
        return
    per_host: dict[int, list] = defaultdict(list)
    rows = GpuRollup.objects.filter(
        host_id__in=host_ids, resolution_s=MINUTE, start__gte=start, start__lt=end
    ).values_list("host_id", "samples", "util_mean", "sm_active_mean")
    for host_id, samples, util, sm in rows:
        per_host[host_id].append((samples, util, sm))
    for w in windows.values():
        items = [item for h in w.host_ids for item in per_host.get(h, [])]
        w.gpu_samples = sum(s for s, _, _ in items)
        w.gpu_util = _weighted_mean((u, s) for s, u, _ in items)
        w.sm_active = _weighted_mean((sm, s) for s, _, sm in items)


@dataclass(frozen=True)
class HostSeen:
    host_id: int
    host_name: str
    last_end: datetime  # end of the last minute with data


def last_data(service_ids: Iterable[int], since: datetime, until: datetime) -> dict[int, list]:
    """Per service, each host's last minute of data between `since` and `until`: 1 query."""
    rows = (
        ServiceRollup.objects.filter(
            service_id__in=list(service_ids),
            resolution_s=MINUTE,
            start__gte=since,
            start__lt=until,
        )
        .values("service_id", "host_id", "host__name")
        .annotate(last=Max("start"))
    )
    out: dict[int, list] = defaultdict(list)
    for r in rows:
        out[r["service_id"]].append(
            HostSeen(r["host_id"], r["host__name"], r["last"] + timedelta(seconds=MINUTE))
        )
    return out


def baseline_costs(services: Iterable[Service]) -> dict[int, float | None]:
    """Cost per Mtok (allocation basis) of each service's current baseline: 1 query."""
    by_id = {s.pk: s for s in services}
    out: dict[int, float | None] = dict.fromkeys(by_id)
    for baseline in Baseline.objects.filter(service_id__in=list(by_id), is_current=True):
        econ = baseline.economics(by_id[baseline.service_id])
        out[baseline.service_id] = None if econ is None else econ.cost_per_mtok
    return out


def source_errors(service_ids: Iterable[int]) -> dict[int, str]:
    """Why a service's Prometheus source is failing (its last error), per service."""
    out: dict[int, str] = {}
    for service_id, name, error in PrometheusSource.objects.filter(
        service_id__in=list(service_ids), enabled=True, status=PrometheusSource.Status.ERROR
    ).values_list("service_id", "name", "last_error"):
        out.setdefault(service_id, f"Prometheus source {name!r} failing: {error}")
    return out
