"""The one place alerts read collectors' and dossiers' data, set-based over many services.

Evaluation reads every claimed service in a few queries per distinct window length (not per
service or rule), 500 services a query, so the time is linear in services (issue 14: 10,000
services a minute on one worker).

`collectors.selectors.service_metrics` reads one service; alerts need the same numbers for
every service at once, so the reads here are read-only queries on collectors' roll-up rows
(never raw samples), fetching only the columns a rule needs: additive traffic and gauge sums
added per (service, host) in the database, combined with collectors' own `Traffic`; the
latency distributions from the service-merged rows, sketches merged bin for bin
(`sketches.merge_serialized`) and scraped bucket deltas added, the P99 taken from the merge.

A window is read at the coarsest resolution that tiles it exactly (`covering_spans`): whole
5-minute periods from 5-minute rows, the minutes around them from minute rows. The roll-up
rewrites a host's 5-minute rows (and the merged rows of every resolution) in the same
transaction as its minutes, as exact merges of them (sums added, sketch bins added), so the
figures are the same as from minute rows: an hour window reads about 15 rows per host instead
of 60 (issue 26). Evaluation reads the GPU rows of all its window lengths in one query
(`add_gpu`: the 5- and 15-minute GPU rules' windows share most of their rows). SLO counts are
read by `alerts.slo_windows`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import F, FloatField, Max, Q, Sum

from analysis import buckets, sketches
from analysis.percentiles import LATENCY_METRICS, Percentile
from collectors.distributions import (
    OutcomeRates,
    Traffic,
    distribution_percentiles,
    merge_bucket_counts,
)
from collectors.models import (
    FIVE_MINUTES,
    MINUTE,
    GpuRollup,
    PrometheusSource,
    ServiceMergedRollup,
    ServiceRollup,
)
from dossiers.models import Baseline, Service

ADDITIVE = (
    "requests", "errors", "scraped_errors", "scraped_aborts", "prompt_tokens", "output_tokens",
    "request_seconds", "scraped_requests",
    "scraped_prompt_tokens", "scraped_generation_tokens", "scraped_seconds",
    "scraped_busy_seconds", "gauge_samples", "scraped_token_requests",
    "scraped_request_prompt_tokens", "scraped_request_output_tokens",
    "scraped_prompt_token_requests",
)  # fmt: skip


@dataclass(frozen=True)
class HostSeen:
    host_id: int
    host_name: str
    last_end: datetime  # end of the last minute with data


@dataclass
class ServiceWindow(OutcomeRates):
    """One service over one closed window, merged over its hosts."""

    service_id: int
    seconds: float  # the window's length, as asked
    requests: float = 0.0
    # Rates are over the seconds that have traffic (each host's scrape windows in which its
    # engine finished requests; else its minutes with pushed rows), added over hosts, never
    # over the nominal window: a 46 s load test in an hour is 8.7 req/s, not 0.11. What a
    # load test measures, so what claims compare. `data_seconds` (the longest any host had)
    # is stated beside every rate.
    qps: float | None = None
    busy_output_tps: float | None = None
    busy_prompt_tps: float | None = None
    data_seconds: float = 0.0
    finished: float = 0.0  # requests finished in any way, errors and aborts included
    errored: float = 0.0
    aborted: float = 0.0
    # Where the outcomes were counted, host by host: "engine" (its counters) or "pushed"
    # (the agent's requests), so a page names the source of the error rate it shows.
    outcome_sources: set[str] = field(default_factory=set)
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
    hosts_seen: list[HostSeen] = field(default_factory=list)  # read with `last_seen` only
    # The workload over the time each host reported (not the whole window): requests/s summed
    # over hosts, and tokens counted by the same source as the requests (the engine's
    # per-request token histograms, else its counters, else pushed rows), so a host that
    # started mid-window neither dilutes the rate nor inflates tokens per request.
    covered_rate: float = 0.0
    counted_requests: float = 0.0
    token_requests: float = 0.0  # the requests the counted output tokens belong to
    prompt_token_requests: float = 0.0  # ...and those the counted prompt tokens belong to
    counted_prompt_tokens: float = 0.0
    counted_output_tokens: float = 0.0

    def tokens_per_request(self) -> tuple[float, float] | None:
        """Mean (prompt, output) tokens per request, each over the requests its tokens were
        counted for, or None without both."""
        if not self.token_requests or not self.prompt_token_requests:
            return None
        return (
            self.counted_prompt_tokens / self.prompt_token_requests,
            self.counted_output_tokens / self.token_requests,
        )

    def busy_tokens_per_second(self, basis: str) -> float | None:
        """Tokens per second of traffic (see `qps`) on a service's basis."""
        if self.busy_output_tps is None:
            return None
        return self.busy_output_tps + ((self.busy_prompt_tps or 0.0) if basis == "total" else 0.0)

    def tokens_per_second(self, basis: str) -> float:
        tokens = self.output_tokens + (self.prompt_tokens if basis == "total" else 0.0)
        return tokens / self.seconds if self.seconds else 0.0


# Services per query: bounded IN lists and memory, whatever the fleet (evaluation claims rules
# in chunks of about this many services anyway).
SERVICES_PER_QUERY = 500


def chunks(ids: Sequence[int], size: int = SERVICES_PER_QUERY) -> Iterator[list[int]]:
    for i in range(0, len(ids), size):
        yield list(ids[i : i + size])


# The roll-up resolutions a window may be read from, coarsest first. `(MINUTE,)` reads minute
# rows only (what evaluation did before issue 26; the bench's same-process reference). Not
# hourly rows: an hour window is whole hours once in 60 minutes, not worth a third row kind.
WINDOW_RESOLUTIONS: tuple[int, ...] = (FIVE_MINUTES, MINUTE)

Span = tuple[int, datetime, datetime]  # (resolution_s, from, to)


def _ceil(ts: datetime, seconds: int) -> datetime:
    epoch = int(ts.timestamp())
    up = -(-epoch // seconds) * seconds
    return ts + timedelta(seconds=up - epoch) - timedelta(microseconds=ts.microsecond)


def _floor(ts: datetime, seconds: int) -> datetime:
    epoch = int(ts.timestamp())
    return ts - timedelta(seconds=epoch % seconds, microseconds=ts.microsecond)


def covering_spans(
    start: datetime, end: datetime, resolutions: Sequence[int] | None = None
) -> list[Span]:
    """[start, end) tiled by whole roll-up periods, coarsest first: the periods of the first
    resolution that fit whole, the rest on each side by the next one, down to the last (which
    takes what is left, so `start` and `end` should be aligned to it)."""
    first, *finer = resolutions or WINDOW_RESOLUTIONS
    if start >= end:
        return []
    if not finer:
        return [(first, start, end)]
    a, b = _ceil(start, first), _floor(end, first)
    if a >= b:
        return covering_spans(start, end, finer)
    return [*covering_spans(start, a, finer), (first, a, b), *covering_spans(b, end, finer)]


def spans_filter(spans: Iterable[Span]) -> Q:
    """Rows of the spans' resolutions starting inside them (an empty list matches none)."""
    q = Q(pk__in=[])
    for resolution, a, b in spans:
        q |= Q(resolution_s=resolution, start__gte=a, start__lt=b)
    return q


def _weighted(value: str, weight: str, within: Q | None = None, suffix: str = "") -> dict[str, Sum]:
    """Sum(value x weight) and Sum(weight) over the rows where value is known and weighted
    (and, with `within`, that match it): the two halves of a weighted mean, added in the
    database."""
    known = Q(**{f"{value}__isnull": False, f"{weight}__gt": 0})
    if within is not None:
        known &= within
    return {
        f"{value}_w{suffix}": Sum(F(value) * F(weight), filter=known, output_field=FloatField()),
        f"{value}_n{suffix}": Sum(weight, filter=known),
    }


def service_windows(
    service_ids: Iterable[int],
    start: datetime,
    end: datetime,
    *,
    metrics: Iterable[str] = LATENCY_METRICS,
    gpu: bool = True,
    quantiles: Sequence[float] = (0.99,),
    last_seen: bool = False,
    resolutions: Sequence[int] | None = None,
) -> dict[int, ServiceWindow]:
    """Every listed service's merged window `[start, end)` (minute-aligned) from roll-ups,
    each part of it from the coarsest rows that tile it (`covering_spans` over `resolutions`,
    default `WINDOW_RESOLUTIONS`).

    Per 500 services, at most three set-based queries: the additive traffic and gauge sums of
    each (service, host), summed in the database over the window's rows; the distributions
    of `metrics` from the service-merged rows (written at roll-up time, so one sketch per
    period whatever the number of hosts), merged over the window; and, with `gpu`, each
    serving host's GPU sums. Only GPU rules need the GPU rows (the bulk of the data) and a
    cost rule over an hour reads no sketch. With `last_seen`, each window also lists its
    hosts with the end of their last minute of data (what "no data" rules watch), from the
    same query (and, for a host whose last row is a coarse one, its minutes in that period).
    Services without a roll-up row in the window are absent from the result (no data).
    """
    ids = sorted(set(service_ids))
    metrics = [m for m in metrics if m in LATENCY_METRICS]
    qs = sorted({0.99, *quantiles})
    spans = covering_spans(start, end, resolutions)
    out: dict[int, ServiceWindow] = {}
    for chunk in chunks(ids):
        windows = _traffic(chunk, spans, (end - start).total_seconds(), last_seen=last_seen)
        if metrics and windows:
            _add_distributions(windows, spans, metrics, qs)
        if gpu:
            _add_gpu(windows, spans)
        out.update(windows)
    return out


def _traffic(
    ids: list[int], spans: list[Span], seconds: float, *, last_seen: bool
) -> dict[int, ServiceWindow]:
    """Each service's traffic and gauges over the window, from per-host sums (one query)."""
    sums = {f"sum_{name}": Sum(name) for name in ADDITIVE}
    resolutions = sorted({r for r, _, _ in spans})
    if last_seen:
        for r in resolutions:
            sums[f"last_start_{r}"] = Max("start", filter=Q(resolution_s=r))
    group = ("service_id", "host_id", "host__name") if last_seen else ("service_id", "host_id")
    rows = (
        ServiceRollup.objects.filter(spans_filter(spans), service_id__any=ids)
        .values(*group)
        .annotate(
            **sums,
            **_weighted("waiting_mean", "gauge_samples"),
            **_weighted("kv_cache_mean", "gauge_samples"),
        )
        .order_by()
    )
    # Per service and host, collectors' own merge type over the window (exactly what adding
    # the host's minute rows one by one gives).
    per_host: dict[int, dict[int, Traffic]] = defaultdict(dict)
    seen: dict[int, list[HostSeen]] = defaultdict(list)
    coarse_last: dict[tuple[int, int], tuple[datetime, datetime]] = {}
    for r in rows:
        if last_seen:
            # The end of the host's last row; when that row is a coarse one (5 minutes, an
            # hour), its last minute is looked up below, so the silence is exact to the minute.
            ends = [
                (r[f"last_start_{res}"] + timedelta(seconds=res), res)
                for res in resolutions
                if r[f"last_start_{res}"] is not None
            ]
            last_end, res = max(ends)
            if res != MINUTE:
                coarse_last[(r["service_id"], r["host_id"])] = (
                    last_end - timedelta(seconds=res),
                    last_end,
                )
            seen[r["service_id"]].append(HostSeen(r["host_id"], r["host__name"], last_end))
        t = per_host[r["service_id"]][r["host_id"]] = Traffic()
        for name in ADDITIVE:
            setattr(t, name, r[f"sum_{name}"] or 0)
        for gauge in ("waiting", "kv_cache"):
            if r[f"{gauge}_mean_n"]:
                t.gauge_weighted[gauge] = [r[f"{gauge}_mean_w"], r[f"{gauge}_mean_n"]]

    if coarse_last:
        exact = _last_minutes(coarse_last)
        for sid, items in seen.items():
            seen[sid] = [
                HostSeen(h.host_id, h.host_name, exact.get((sid, h.host_id), h.last_end))
                for h in items
            ]

    out: dict[int, ServiceWindow] = {}
    for sid, hosts in per_host.items():
        w = out[sid] = ServiceWindow(service_id=sid, seconds=seconds, host_ids=set(hosts))
        w.hosts_seen = sorted(seen.get(sid, []), key=lambda h: h.host_name)
        for t in hosts.values():
            # Engine counters see every request; pushed requests may be a sample.
            w.requests += t.scraped_requests if t.scraped_seconds > 0 else t.requests
            for attr, scraped, pushed in (
                ("qps", t.scraped_requests, t.requests),
                ("busy_output_tps", t.scraped_generation_tokens, t.output_tokens),
                ("busy_prompt_tps", t.scraped_prompt_tokens, t.prompt_tokens),
            ):
                rate = t.busy_rate(scraped, pushed)
                if rate is not None:
                    setattr(w, attr, (getattr(w, attr) or 0.0) + rate)
            w.data_seconds = max(w.data_seconds, t.busy_seconds)
            finished, errored, aborted = t.outcomes
            w.finished += finished
            w.errored += errored
            w.aborted += aborted
            if finished:
                w.outcome_sources.add("engine" if t.scraped_seconds > 0 else "pushed")
            w.output_tokens += (t.generation_tps or 0.0) * seconds
            w.prompt_tokens += (t.prompt_tps or 0.0) * seconds
            w.gauge_samples += t.gauge_samples
            if t.scraped_seconds > 0:
                counted = (t.scraped_requests, t.scraped_prompt_tokens,
                           t.scraped_generation_tokens, t.scraped_seconds)  # fmt: skip
            else:
                counted = (t.requests, t.prompt_tokens, t.output_tokens, t.request_seconds)
            w.counted_requests += counted[0]
            w.covered_rate += counted[0] / counted[3] if counted[3] else 0.0
            prompt_requests = counted[0]
            if t.scraped_token_requests > 0 or t.scraped_prompt_token_requests > 0:
                # The engine's per-request token histograms, each sum over its own count:
                # vLLM's token counters also hold the tokens of clients that disconnected, which
                # no request counter counts; TGI's prompt histogram observes every validated
                # sequence (failed, dropped, each best_of one), its success counter does not.
                counted = (t.scraped_token_requests, t.scraped_request_prompt_tokens,
                           t.scraped_request_output_tokens)  # fmt: skip
                prompt_requests = t.scraped_prompt_token_requests
            w.token_requests += counted[0]
            w.prompt_token_requests += prompt_requests
            w.counted_prompt_tokens += counted[1]
            w.counted_output_tokens += counted[2]
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
    return out


def _last_minutes(
    coarse: dict[tuple[int, int], tuple[datetime, datetime]],
) -> dict[tuple[int, int], datetime]:
    """(service, host) -> end of its last minute row inside the given coarse period (one
    query over the union of the periods; a host's minutes after its period hold no rows, or
    its last row would not be that period's)."""
    out: dict[tuple[int, int], datetime] = {}
    first = min(a for a, _ in coarse.values())
    last = max(b for _, b in coarse.values())
    rows = (
        ServiceRollup.objects.filter(
            service_id__any=sorted({sid for sid, _ in coarse}),
            host_id__any=sorted({hid for _, hid in coarse}),
            resolution_s=MINUTE,
            start__gte=first,
            start__lt=last,
        )
        .values("service_id", "host_id")
        .annotate(last_start=Max("start"))
        .order_by()
    )
    for r in rows:
        key = (r["service_id"], r["host_id"])
        if key in coarse and coarse[key][0] <= r["last_start"] < coarse[key][1]:
            out[key] = r["last_start"] + timedelta(seconds=MINUTE)
    return out


def _add_distributions(
    windows: dict[int, ServiceWindow],
    spans: list[Span],
    metrics: list[str],
    qs: list[float],
) -> None:
    """Each service's latency distributions over the window: the service-merged rows'
    sketches merged bin for bin (and scraped bucket deltas added), then the quantiles taken
    from the merge, never averaged (one query)."""
    columns = ["service_id"]
    for m in metrics:
        columns += [f"{m}_count", f"{m}_sketch", f"{m}_buckets"]
    blobs: dict[tuple[int, str], list[bytes]] = defaultdict(list)
    counts: dict[tuple[int, str], list[buckets.BucketCounts]] = defaultdict(list)
    for row in ServiceMergedRollup.objects.filter(
        spans_filter(spans), service_id__any=list(windows)
    ).values_list(*columns):
        sid = row[0]
        for i, m in enumerate(metrics):
            count, blob, data = row[1 + 3 * i : 4 + 3 * i]
            if blob is not None and count:
                blobs[(sid, m)].append(blob)
            if data:
                counts[(sid, m)].append(buckets.BucketCounts.from_dict(data))
    for sid, w in windows.items():
        for m in metrics:
            items = blobs.get((sid, m))
            sketch = sketches.merge_serialized(items) if items else None
            bc = merge_bucket_counts(counts.get((sid, m), []))
            w.percentiles[m] = {p.q: p for p in distribution_percentiles(sketch, bc, qs)}
            w.latency[m] = w.percentiles[m][0.99]


def add_gpu(
    windows: Mapping[int, Mapping[int, ServiceWindow]],
    end: datetime,
    *,
    resolutions: Sequence[int] | None = None,
) -> None:
    """`service_windows`' GPU figures for windows of several lengths ending at `end` (window
    length in seconds -> its service windows, read with `gpu=False`), every length at once.

    Each query reads the rows of every length's spans once and sums each length's own with a
    FILTER: a 5- and a 15-minute window ending together share most of their rows, and the GPU
    rows (one per GPU per period) are the bulk of what evaluation reads."""
    _add_gpu_parts(
        {
            length: (ws, covering_spans(end - timedelta(seconds=length), end, resolutions))
            for length, ws in windows.items()
            if ws
        }
    )


def _add_gpu(windows: dict[int, ServiceWindow], spans: list[Span]) -> None:
    """The GPU figures of one window's services (`service_windows` with `gpu`)."""
    _add_gpu_parts({0: (windows, spans)})


HOSTS_PER_QUERY = 2000  # as many as SERVICES_PER_QUERY services of four hosts


def _add_gpu_parts(parts: dict[int, tuple[Mapping[int, ServiceWindow], list[Span]]]) -> None:
    """GPU utilization and SM active of the hosts serving each service in each window, each
    the mean over every GPU period weighted by its samples (per-host sums, each window's by
    its own FILTER over the rows of all of them: one query per `HOSTS_PER_QUERY` hosts)."""
    host_ids = sorted({h for ws, _ in parts.values() for w in ws.values() for h in w.host_ids})
    if not host_ids:
        return
    sums: dict[str, Sum] = {}
    for key, (_, spans) in parts.items():
        within = spans_filter(spans)
        sums[f"samples_{key}"] = Sum("samples", filter=within)
        sums.update(_weighted("util_mean", "samples", within, f"_{key}"))
        sums.update(_weighted("sm_active_mean", "samples", within, f"_{key}"))
    rows_of_all = spans_filter(span for _, spans in parts.values() for span in spans)
    per_host: dict[int, dict] = {}
    for chunk in chunks(host_ids, HOSTS_PER_QUERY):
        for r in (
            GpuRollup.objects.filter(rows_of_all, host_id__any=chunk)
            .values("host_id")
            .annotate(**sums)
            .order_by()
        ):
            per_host[r["host_id"]] = r
    for key, (ws, _) in parts.items():
        for w in ws.values():
            items = [per_host[h] for h in w.host_ids if h in per_host]
            w.gpu_samples = sum(r[f"samples_{key}"] or 0 for r in items)
            for attr, value in (("gpu_util", "util_mean"), ("sm_active", "sm_active_mean")):
                total = sum(r[f"{value}_w_{key}"] or 0.0 for r in items)
                weight = sum(r[f"{value}_n_{key}"] or 0 for r in items)
                setattr(w, attr, total / weight if weight else None)


def baseline_costs(services: Iterable[Service]) -> dict[int, float | None]:
    """Cost per Mtok (allocation basis) of each service's current baseline: 1 query."""
    by_id = {s.pk: s for s in services}
    out: dict[int, float | None] = dict.fromkeys(by_id)
    for baseline in Baseline.objects.filter(service_id__any=list(by_id), is_current=True):
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
