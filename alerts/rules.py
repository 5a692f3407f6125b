"""What each rule kind observes in a window: a value, its health and the alert's identity.

`observe` turns the batched reads of `alerts.sources` into `Observation`s for the pure state
machine in `analysis.alerting`. One observation per identity: the service, or for "no data"
rules each host of the service and the service itself.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime

from alerts.models import Rule
from alerts.sources import HostSeen, ServiceWindow
from analysis import cost
from analysis.alerting import Health, Observation

# A GPU "looks busy" above this utilization; below it, a low SM/util ratio means nothing.
SM_GAP_MIN_UTIL = 0.5
# Requests queued on average over the window for the GPU to be "waiting" rather than idle.
GPU_WAITING_MIN_QUEUE = 1.0


@dataclass
class Inputs:
    """Everything one evaluation read, for all rules (see `alerts.services.evaluate_all`)."""

    windows: dict[int, dict[int, ServiceWindow]] = field(default_factory=dict)  # window_s -> sid
    last_data: dict[int, list[HostSeen]] = field(default_factory=dict)
    baseline_costs: dict[int, float | None] = field(default_factory=dict)
    window_end: datetime | None = None
    no_data_lookback_s: float = 3600.0


def base_labels(rule: Rule) -> dict[str, str]:
    service = rule.service
    labels = {
        "alertname": rule.name,
        "service": service.slug,
        "team": service.team.slug,
        "severity": rule.severity,
        "rule_kind": rule.kind,
    }
    labels.update(rule.labels or {})
    return labels


def fingerprint(rule_id: int, identity: dict[str, str]) -> str:
    """Stable id of an alert: the rule plus its identity labels (not severity or free labels)."""
    raw = json.dumps([rule_id, sorted(identity.items())], separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def observe(rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
    """(identity labels, observation) pairs for `rule` from the batched inputs."""
    if rule.kind == Rule.Kind.NO_DATA:
        return _observe_no_data(rule, inputs)
    window = inputs.windows.get(rule.window_s, {}).get(rule.service_id)
    return [({"service": rule.service.slug}, _observe_service(rule, window, inputs))]


def _minutes(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def _observe_service(rule: Rule, w: ServiceWindow | None, inputs: Inputs) -> Observation:
    span = _minutes(rule.window_s)
    if w is None:
        return Observation(Health.NO_DATA, reason=f"no roll-up rows in the last {span}")
    kind = rule.kind
    if kind in Rule.LATENCY_KINDS:
        p = w.latency.get(Rule.LATENCY_KINDS[kind])
        if p is None or p.count == 0:
            return Observation(Health.NO_DATA, count=0, reason=f"no requests in the last {span}")
        if p.count < rule.min_requests:
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=p.count,
                reason=f"P99 rests on {p.count} requests, fewer than {rule.min_requests}",
            )
        if p.value is None:  # bucket-bounded, in +Inf: known only to exceed the last edge
            edge = p.above_last_edge or 0.0
            return Observation(
                Health.OK, value=edge, count=p.count, reason=f"P99 > {edge:g} ms (last bucket)"
            )
        return Observation(Health.OK, value=p.value, count=p.count, reason=f"P99 over {span}")
    if kind == Rule.Kind.GPU_WAITING:
        if w.gpu_util is None:
            return Observation(Health.NO_DATA, reason="no GPU utilization from these hosts")
        if w.waiting_mean is None:
            return Observation(Health.NO_DATA, reason="no queue length (requests waiting) scraped")
        queued = w.waiting_mean >= GPU_WAITING_MIN_QUEUE
        return Observation(
            Health.OK,
            value=w.gpu_util,
            count=w.gpu_samples,
            gate=queued,
            reason=f"{w.waiting_mean:.1f} requests waiting on average",
        )
    if kind == Rule.Kind.SM_GAP:
        if w.gpu_util is None:
            return Observation(Health.NO_DATA, reason="no GPU utilization from these hosts")
        if w.sm_active is None:
            return Observation(
                Health.NO_DATA, reason="no SM active (DCGM profiling or NVML GPM) from these hosts"
            )
        ratio = w.sm_active / w.gpu_util if w.gpu_util else 1.0
        return Observation(
            Health.OK,
            value=ratio,
            count=w.gpu_samples,
            gate=w.gpu_util >= SM_GAP_MIN_UTIL,
            reason=f"SM active {w.sm_active:.0%} vs GPU-Util {w.gpu_util:.0%}",
        )
    if kind == Rule.Kind.KV_CACHE:
        if w.kv_cache_mean is None:
            return Observation(Health.NO_DATA, reason="no KV cache usage scraped")
        return Observation(
            Health.OK, value=w.kv_cache_mean, count=w.gauge_samples, reason="mean KV cache usage"
        )
    if kind in (Rule.Kind.COST_VS_BASELINE, Rule.Kind.MARGIN):
        return _observe_economics(rule, w, inputs)
    return Observation(Health.ERROR, reason=f"unknown rule kind {kind!r}")


def _observe_economics(rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
    service = rule.service
    requests = round(w.requests)
    if requests < rule.min_requests:
        return Observation(
            Health.INSUFFICIENT_DATA,
            count=requests,
            reason=f"{requests} requests in the window, fewer than {rule.min_requests}",
        )
    tps = w.tokens_per_second(service.token_basis)
    if tps <= 0:
        return Observation(Health.NO_DATA, count=requests, reason="no tokens counted")
    econ = cost.economics(
        gpu_hour_price=float(service.gpu_hour_price),
        gpus=service.total_gpus,
        tokens_per_second=tps,
        price_per_mtok=None if service.price_per_mtok is None else float(service.price_per_mtok),
    )
    if rule.kind == Rule.Kind.MARGIN:
        if econ.margin is None:
            return Observation(Health.NO_DATA, reason="the service has no price per Mtok")
        return Observation(
            Health.OK,
            value=econ.margin,
            count=requests,
            reason=f"cost {econ.cost_per_mtok:.3g}/Mtok at {tps:.0f} tokens/s",
        )
    base = inputs.baseline_costs.get(service.pk)
    if not base:
        return Observation(Health.NO_DATA, reason="no current baseline with a throughput")
    change = (econ.cost_per_mtok / base - 1.0) * 100.0
    return Observation(
        Health.OK,
        value=change,
        count=requests,
        reason=f"cost {econ.cost_per_mtok:.3g}/Mtok vs baseline {base:.3g}/Mtok",
    )


def _observe_no_data(rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
    """Seconds of silence per host (seen within the lookback) and for the whole service."""
    end = inputs.window_end
    assert end is not None
    slug = rule.service.slug
    seen = inputs.last_data.get(rule.service_id, [])
    out = []
    for h in seen:
        silent = max(0.0, (end - h.last_end).total_seconds())
        obs = Observation(Health.OK, value=silent, reason=f"last data from {h.host_name}")
        out.append(({"service": slug, "host": h.host_name}, obs))
    if seen:
        silent = min(max(0.0, (end - h.last_end).total_seconds()) for h in seen)
        out.append(({"service": slug}, Observation(Health.OK, value=silent, reason="any host")))
    return out


def silent_for_lookback(inputs: Inputs) -> Observation:
    """A live no-data alert whose host fell out of the lookback is still silent."""
    return Observation(
        Health.OK,
        value=inputs.no_data_lookback_s,
        reason=f"no data for at least {inputs.no_data_lookback_s:g} s",
    )
