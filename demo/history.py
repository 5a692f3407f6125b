"""Two weeks of history for the demo fleet, so every range of every chart draws from the start.

For each demo service with a current baseline: hourly roll-ups for the last `days` days and
minute roll-ups for the last day, on the host its simulated agent will push from
(`demo-gpu-NN`, as `run_demo` names them). Traffic, KV cache and GPU shares follow the same
curves as the simulated engine that will continue them (`demo.profile`:
`daily_load`, `expected_kv_usage`, `gpu_shares`), so live data joins the history without a step;
latencies follow the baseline's percentiles and tokens per request are the baseline's means
(in the token counters and in vLLM's per-request token histograms alike); preemptions are the
profile's share of the requests (none but for a KV-bound service).
One service carries a story: a regression five days ago (the slowest tenth of requests 2.2x
slower for four hours), with its P99 alert pending, firing and resolving in the alert history.

The rows are what the roll-up job computes (DDSketches at the project's accuracy, counts,
tokens, GPU means) and are stored through the job's own writer (`store_rollups`), which merges
the minutes into their 5-minute and hourly rows and writes the service-merged rows, so pages,
alerts and claims read them like live data. The story's alert is stepped and written by the
alerts app's lifecycle (`alerts.services.replay`), as a live evaluation writes one; nothing is
notified. Idempotent: a service that already has roll-ups is left alone.

`run_demo` continues the history to the minute its simulated agents start at
(`continue_fleet`), the same way, so there is no hole between the seed's last minute and the
first live one.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_left
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from alerts.services import ensure_default_rules, evaluation_lag, replay
from analysis import sketches
from analysis.alerting import Health, Observation
from analysis.buckets import BucketCounts
from collectors.models import HOUR, MINUTE, GpuRollup, Host, ServiceRollup
from collectors.services.rollups import store_rollups
from demo.engine_profile import GPU_MEMORY_RESERVED, EngineProfile, daily_load, gpu_shares
from demo.profile import DEMO_SWING, demo_profile
from demo.simulator.engine import ITL_BUCKETS, ITL_JITTER
from dossiers.models import Baseline, Service
from dossiers.selectors import current_baseline

GB = 1024**3
SAMPLES_PER_ROW = 60  # weighted draws per row and latency family: shape, not volume
MAX_GPUS = 8  # GPU rows per host (a big service's history stays small)
# How far back from its start `run_demo` continues a seeded history: the fast burn pair's
# hour, so every pair's short window (1 min to 6 h) and the live pages' last hour have data.
# An older hole stays: filling it costs start-up time (an hour of the six demo services: 11 s
# on a loaded 2-core machine).
CONTINUE_AT_MOST = timedelta(hours=1)
REGRESSION_FACTOR = 2.2


def demo_host_name(index: int) -> str:
    """The host `run_demo`'s agent number `index` (from 1) pushes as."""
    return f"demo-gpu-{index:02d}"


@dataclass(frozen=True)
class Regression:
    start: datetime
    end: datetime

    def covers(self, t: datetime) -> bool:
        return self.start <= t < self.end


def backfill_fleet(*, days: int = 14, now: datetime | None = None, stdout=None) -> int:
    """History for every demo service (in `run_demo`'s order); returns the services filled."""
    now = (now or timezone.now()).replace(second=0, microsecond=0)
    filled = 0
    story_told = False
    for index, service in enumerate(Service.objects.order_by("pk"), start=1):
        baseline = current_baseline(service)
        if baseline is None or not baseline.qps:
            continue
        regression = None
        if not story_told and service.slo_p99_e2e_ms:
            day = (now - timedelta(days=5)).replace(hour=10, minute=0)
            regression = Regression(day, day + timedelta(hours=4))
            story_told = True
        if backfill_service(
            service=service, baseline=baseline, host_name=demo_host_name(index), days=days,
            now=now, regression=regression, seed=index,
        ):  # fmt: skip
            filled += 1
            if stdout is not None:
                stdout.write(f"  history: {service.slug} ({days} days)")
    return filled


@transaction.atomic
def backfill_service(
    *,
    service: Service,
    baseline: Baseline,
    host_name: str,
    days: int,
    now: datetime,
    regression: Regression | None = None,
    seed: int = 0,
) -> bool:
    host, _ = Host.objects.get_or_create(name=host_name)
    if ServiceRollup.objects.filter(service=service, host=host).exists():
        return False
    rng = random.Random(seed)
    itl_rng = random.Random(seed + 1)  # its own stream: the other draws stay as they were
    start_hour = (now - timedelta(days=days)).replace(minute=0)
    # Minutes from the top of the hour a day back: the hours from there on are merged from
    # them when stored, as the roll-up job merges live minutes.
    first_minute = max(start_hour, (now - timedelta(days=1)).replace(minute=0))
    for resolution, start, end in ((HOUR, start_hour, first_minute), (MINUTE, first_minute, now)):
        _store_span(service, baseline, host, resolution, start, end, rng, itl_rng, regression)
    if regression is not None:
        _tell_the_story(service, baseline, regression)
    return True


def _store_span(service, baseline, host, resolution, start, end, rng, itl_rng, regression=None):
    """The service's rows of `resolution` in [start, end) on `host`, stored as the roll-up job
    stores its rows: with the host's 5-minute and hourly rows of the minutes and the
    service-merged rows (SLO counts, quantiles) pages read."""
    profile = demo_profile(service) or EngineProfile(swing=DEMO_SWING)
    gpus = min(MAX_GPUS, max(1, service.total_gpus))
    rate = baseline.qps * max(1, service.replicas)  # the service's whole load, one host
    service_rows, gpu_rows = [], []
    t = start
    while t < end:
        row = _row(service, host, baseline, resolution, t, rate, regression, rng, profile)
        row.itl_buckets = _itl_buckets(baseline, row, itl_rng)
        service_rows.append(row)
        gpu_rows += _gpu_rows(host, gpus, resolution, t, baseline, rng)
        t += timedelta(seconds=resolution)
    store_rollups(
        host_id=host.pk, resolution=resolution, service_rows=service_rows, gpu_rows=gpu_rows
    )
    return len(service_rows)


def next_minute(t: datetime) -> datetime:
    """The first minute boundary after `t` (live traffic starts on one: see `continue_fleet`)."""
    return t.replace(second=0, microsecond=0) + timedelta(minutes=1)


def continue_fleet(
    *, until: datetime, services: list[Service] | None = None, stdout=None
) -> list[Service]:
    """Continue each demo service's seeded history on its demo host up to `until` (a minute
    boundary): the minutes between the history's last minute and `until`, drawn as the
    history is (`continue_service`). Returns the services whose history now reaches `until`
    (those with none are left without: `seed_demo --history-days 0` asked for none).

    `run_demo` calls it as it starts, with `until` the minute its simulated agents start
    at, so the seed's last minute (when `seed_demo` ran, minutes or days before) meets the
    first live one: every window the SLO burn pairs and live pages read has data from the
    first page view on. Running it twice to one `until` writes nothing the second time."""
    reached = []
    for index, service in enumerate(Service.objects.order_by("pk"), start=1):
        if services is not None and service not in services:
            continue
        baseline = current_baseline(service)
        if baseline is None or not baseline.qps:
            continue
        written = continue_service(
            service=service, baseline=baseline, host_name=demo_host_name(index), until=until,
            seed=index,
        )  # fmt: skip
        if written is None:
            continue
        reached.append(service)
        if written and stdout is not None:
            stdout.write(f"  history: {service.slug} continued by {written} minute(s)")
    return reached


@transaction.atomic
def continue_service(
    *,
    service: Service,
    baseline: Baseline,
    host_name: str,
    until: datetime,
    max_gap: timedelta = CONTINUE_AT_MOST,
    seed: int = 0,
) -> int | None:
    """Minute rows from the end of the service's latest minute on `host_name` up to `until`
    (at most `max_gap` of them: an older hole stays, so a demo resumed after a week starts in
    seconds), stored as the seed's are. Returns the minutes written, None when the host has
    no minute of the service to continue (no history)."""
    host = Host.objects.filter(name=host_name).first()
    if host is None:
        return None
    last = ServiceRollup.objects.filter(service=service, host=host, resolution_s=MINUTE).aggregate(
        last=Max("start")
    )["last"]
    if last is None:
        return None
    start = max(last + timedelta(minutes=1), until.replace(second=0, microsecond=0) - max_gap)
    if start >= until:
        return 0
    # Seeded by where the span starts, so each continuation draws its own noise.
    rng = random.Random(f"{seed}:{start.isoformat()}")
    itl_rng = random.Random(f"{seed}:{start.isoformat()}:itl")
    return _store_span(service, baseline, host, MINUTE, start, until, rng, itl_rng)


def _daily(t: datetime, resolution: int = MINUTE) -> float:
    """Load relative to the mean, as the simulated engine's rate follows it (`daily_load`, the
    demo's swing), at the middle of the row's interval."""
    return daily_load(t.timestamp() + resolution / 2, DEMO_SWING)


def _draws(p50: float | None, p99: float | None, n: int, rng: random.Random) -> list[float]:
    """Lognormal draws with the baseline's median and P99 (sigma from their ratio)."""
    if not p50:
        return []
    sigma = math.log(p99 / p50) / 2.326 if p99 and p99 > p50 else 0.3
    mu = math.log(p50)
    return [math.exp(rng.gauss(mu, sigma)) for _ in range(n)]


def _row(service, host, baseline, resolution, t, rate, regression, rng, profile) -> ServiceRollup:
    seconds = resolution
    load = _daily(t, resolution)
    # Poisson noise on the count, as live traffic has (the curve itself is smooth).
    expected = rate * load * seconds
    requests = max(1, round(rng.gauss(expected, math.sqrt(expected))))
    slow = regression is not None and regression.covers(t)
    row = ServiceRollup(
        service=service, host=host, resolution_s=resolution, start=t, requests=requests,
        request_seconds=float(seconds),
        # As an engine scrape would count them (the live agent's rows on the same host do).
        scraped_requests=float(requests), scraped_seconds=float(seconds),
        scraped_busy_seconds=float(seconds),  # the demo's engines are never idle a minute
        scraped_prompt_tokens=requests * (baseline.prompt_tokens_mean or 0),
        scraped_generation_tokens=requests * (baseline.output_tokens_mean or 0),
        # vLLM 0.32's per-request token histograms observe the same requests and tokens, and
        # its preemption counter moves only for a KV-bound service (`EngineProfile.preemptions`).
        scraped_token_requests=float(requests),
        scraped_prompt_token_requests=float(requests),
        scraped_request_prompt_tokens=requests * (baseline.prompt_tokens_mean or 0),
        scraped_request_output_tokens=requests * (baseline.output_tokens_mean or 0),
        scraped_preemptions=profile.expected_preemptions(requests, load),
        scraped_finished_counting_preemptions=float(requests),
        prompt_tokens=round(requests * (baseline.prompt_tokens_mean or 0)),
        output_tokens=round(requests * (baseline.output_tokens_mean or 0)),
        qps=requests / seconds,
        prompt_tps=requests * (baseline.prompt_tokens_mean or 0) / seconds,
        generation_tps=requests * (baseline.output_tokens_mean or 0) / seconds,
        gauge_samples=seconds // 15, running_mean=profile.expected_in_flight(rate * load),
        waiting_mean=0.2 * load * (4 if slow else 1),
        kv_cache_mean=profile.expected_kv_usage(rate * load),
    )  # fmt: skip
    weight = requests / SAMPLES_PER_ROW
    for metric in ("e2e", "ttft", "tpot"):
        p50 = baseline.latency(metric, "p50")
        p99 = baseline.latency(metric, "p99")
        if p50 is None:
            continue
        scale = 1.0 + 0.08 * (load - 1.0)  # a little slower at the peak
        draws = [v * scale for v in _draws(p50, p99, SAMPLES_PER_ROW, rng)]
        if slow and metric == "e2e":
            # The deploy's regression: the slowest tenth of requests take much longer.
            cut = sorted(draws)[int(0.9 * len(draws))]
            draws = [v * REGRESSION_FACTOR if v >= cut else v for v in draws]
        sketch = sketches.new_sketch()
        for value in draws:
            sketch.add(value, weight)
        stats = sketches.summary(sketch)
        setattr(row, f"{metric}_sketch", sketches.dumps(sketch))
        setattr(row, f"{metric}_count", round(stats["count"]))
        setattr(row, f"{metric}_sum", stats["sum"])
        setattr(row, f"{metric}_min", stats["min"])
        setattr(row, f"{metric}_max", stats["max"])
    return row


def _itl_buckets(baseline: Baseline, row: ServiceRollup, rng: random.Random) -> dict | None:
    """The engine's inter-token latency histogram for the row (seconds, vLLM's ITL buckets), as
    the simulated engine makes it live: each token gap is its request's decode step (a draw of
    the baseline's TPOT) times a jitter of mean 1. None without a TPOT or output tokens."""
    p50, p99 = baseline.latency("tpot", "p50"), baseline.latency("tpot", "p99")
    gaps = row.requests * max((baseline.output_tokens_mean or 0) - 1, 0)
    if not p50 or gaps <= 0:
        return None
    mu = -(ITL_JITTER**2) / 2
    counts = [0.0] * (len(ITL_BUCKETS) + 1)
    for step_ms in _draws(p50, p99, SAMPLES_PER_ROW, rng):
        itl_s = step_ms / 1000 * rng.lognormvariate(mu, ITL_JITTER)
        counts[bisect_left(ITL_BUCKETS, itl_s)] += gaps / SAMPLES_PER_ROW  # `le` buckets
    return BucketCounts(ITL_BUCKETS, counts).to_dict()


def _gpu_rows(host, gpus, resolution, t, baseline, rng) -> list[GpuRollup]:
    load = _daily(t, resolution)
    util, sm, dram = gpu_shares(
        baseline.gpu_util or 0.7, baseline.sm_active or 0.0, baseline.dram_active or 0.0, load=load
    )
    rows = []
    for index in range(gpus):
        rows.append(
            GpuRollup(
                host=host,
                gpu_index=index,
                resolution_s=resolution,
                start=t,
                samples=resolution // 10,
                name=host.name,
                util_mean=min(1.0, util + rng.gauss(0, 0.003)),
                mem_util_mean=dram * 0.85 if baseline.dram_active else 0.5 * load,  # as the agent
                sm_active_mean=None if baseline.sm_active is None else sm,
                dram_active_mean=None if baseline.dram_active is None else dram,
                power_mean=250 + 350 * util,
                mem_used_max=int(80 * GB * GPU_MEMORY_RESERVED),
                mem_total_bytes=80 * GB,
                temp_max=45 + 25 * util,
            )
        )
    return rows


def _tell_the_story(service: Service, baseline: Baseline, regression: Regression) -> None:
    """The regression's P99 alert in the alert history: the service's P99 rule evaluated each
    minute from the regression's start until its alert resolved, stepped and written by the
    alerts app as a live evaluation would (pending, firing, resolved), notifying nobody."""
    ensure_default_rules(service)
    rule = service.alert_rules.filter(kind="p99_e2e").first()
    if rule is None:
        return
    thresholds = rule.thresholds()
    # What the rule's window saw: the regression's P99 (over the threshold, so the story
    # fires) while the window held regressed minutes, the baseline's (under the resolve
    # threshold, so it resolves) before and after.
    slow = max((baseline.e2e_p99_ms or rule.threshold) * REGRESSION_FACTOR, 1.5 * rule.threshold)
    normal = baseline.e2e_p99_ms or 0.0
    normal = normal if normal < thresholds.resolve else 0.8 * thresholds.resolve
    lag, window = evaluation_lag(), timedelta(seconds=rule.window_s)
    span = f"{rule.window_s // 60} min"
    observations, t = [], regression.start
    ends = regression.end + lag + window + timedelta(seconds=rule.keep_firing_for_s + 300)
    while t <= ends:
        seen = t - lag - window < regression.end and t - lag > regression.start
        reason = f"P99 over {span} (the demo's history)"
        observations.append((t, Observation(Health.OK, value=slow if seen else normal,
                                            reason=reason)))  # fmt: skip
        t += timedelta(minutes=1)
    replay(rule, {"service": service.slug}, observations)


def continue_to_next_minute(
    services: list[Service], *, clock=timezone.now, stdout=None
) -> datetime | None:
    """Continue the services' histories (`continue_fleet`) to the next minute boundary, where
    their live traffic is to start, and return it; None when none of them has history. If
    writing took past that boundary, continues to the next one (a minute or two: quick)."""
    while True:
        live_from = next_minute(clock())
        if not continue_fleet(until=live_from, services=services, stdout=stdout):
            return None
        if clock() < live_from:
            return live_from
