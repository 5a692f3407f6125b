"""Two weeks of history for the demo fleet, so every range of every chart draws from the start.

For each demo service with a current baseline: hourly roll-ups for the last `days` days and
minute roll-ups for the last day, on the host its simulated agent will push from
(`demo-gpu-NN`, as `run_demo` names them). Traffic, KV cache and GPU shares follow the same
curves as the simulated engine that will continue them (`demo.profile`:
`daily_load`, `expected_kv_usage`, `gpu_shares`), so live data joins the history without a step;
latencies follow the baseline's percentiles and tokens per request are the baseline's means.
One service carries a story: a regression five days ago (the slowest tenth of requests 2.2x
slower for four hours), with its P99 alert pending, firing and resolving in the alert history.

The rows are written as the roll-up job writes them (DDSketches at the project's accuracy,
counts, tokens, GPU means), so pages, alerts and claims read them like live data. Idempotent:
a service that already has roll-ups is left alone.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import transaction
from django.utils import timezone

from alerts.models import AlertEvent, AlertInstance
from alerts.rules import base_labels, fingerprint
from alerts.services import ensure_default_rules
from analysis import sketches
from analysis.alerting import State
from collectors.models import HOUR, MINUTE, GpuRollup, Host, ServiceRollup
from collectors.services.rollups import rebuild_derived_rollups
from demo.engine_profile import GPU_MEMORY_RESERVED, EngineProfile, daily_load, gpu_shares
from demo.profile import DEMO_SWING, demo_profile
from dossiers.models import Baseline, Service
from dossiers.selectors import current_baseline

GB = 1024**3
SAMPLES_PER_ROW = 60  # weighted draws per row and latency family: shape, not volume
MAX_GPUS = 8  # GPU rows per host (a big service's history stays small)
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
    profile = demo_profile(service) or EngineProfile(swing=DEMO_SWING)
    gpus = min(MAX_GPUS, max(1, service.total_gpus))
    rate = baseline.qps * max(1, service.replicas)  # the service's whole load, one host
    start_hour = (now - timedelta(days=days)).replace(minute=0)
    service_rows, gpu_rows = [], []
    t = start_hour
    while t < now - timedelta(hours=1):
        service_rows.append(_row(service, host, baseline, HOUR, t, rate, regression, rng, profile))
        gpu_rows += _gpu_rows(host, gpus, HOUR, t, baseline, rng)
        t += timedelta(hours=1)
    t = now - timedelta(days=1)
    while t < now:
        service_rows.append(
            _row(service, host, baseline, MINUTE, t, rate, regression, rng, profile)
        )
        gpu_rows += _gpu_rows(host, min(gpus, 4), MINUTE, t, baseline, rng)
        t += timedelta(minutes=1)
    ServiceRollup.objects.bulk_create(service_rows, batch_size=500)
    GpuRollup.objects.bulk_create(gpu_rows, batch_size=1000, ignore_conflicts=True)
    # The 5-minute and service-merged rows the roll-up writes beside these (pages read them).
    rebuild_derived_rollups(start=start_hour, end=now, host_ids=[host.pk])
    if regression is not None:
        _tell_the_story(service, baseline, regression)
    return True


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
    """The regression's P99 alert, pending, firing and resolved, in the alert history."""
    ensure_default_rules(service)
    rule = service.alert_rules.filter(kind="p99_e2e").first()
    if rule is None:
        return
    identity = {"service": service.slug}
    fired = regression.start + timedelta(seconds=rule.for_s + 120)
    resolved = regression.end + timedelta(seconds=rule.keep_firing_for_s + 120)
    value = (baseline.e2e_p99_ms or rule.threshold) * REGRESSION_FACTOR
    # The evaluations the alert lived through: every 5 minutes, the regression's P99 until it
    # ended, then the baseline's until the alert resolved (what its chart draws).
    series, t = [], regression.start + timedelta(seconds=120)
    while t <= resolved:
        series.append([int(t.timestamp()), value if t < regression.end else baseline.e2e_p99_ms])
        t += timedelta(minutes=5)
    instance = AlertInstance.objects.create(
        rule=rule, service=service, fingerprint=fingerprint(rule.pk, identity),
        labels={**base_labels(rule), **identity},
        annotations={"summary": f"P99 end-to-end {value:,.0f} ms above {rule.threshold:,.0f} ms"},
        state=State.RESOLVED, value=baseline.e2e_p99_ms, threshold=rule.threshold, series=series,
        pending_since=regression.start + timedelta(seconds=120), fired_at=fired,
        last_active_at=regression.end, resolved_at=resolved, ended_at=resolved,
        last_evaluated_at=resolved,
    )  # fmt: skip
    AlertEvent.objects.bulk_create(
        [
            AlertEvent(
                rule=rule,
                service=service,
                instance=instance,
                at=at,
                kind=kind,
                value=v,
                threshold=rule.threshold,
                reason=reason,
            )
            for at, kind, v, reason in (
                (instance.pending_since, "pending", value, "P99 over 5 min"),
                (fired, "firing", value, "P99 over 5 min"),
                (resolved, "resolved", baseline.e2e_p99_ms, "P99 back under the resolve threshold"),
            )
        ]
    )
