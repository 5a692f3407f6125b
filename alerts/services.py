"""Writes: default rules, the evaluation of every due rule, silences.

`evaluate_all(now)` is the one entry point of evaluation (the Celery beat task and the demo
runner both call it). Per call: align `now` to the minute (t), then chunk by chunk: claim up to
`evaluation_chunk()` enabled rules not yet evaluated at t (a conditional claim: rows locked
with SKIP LOCKED and stamped with t in the chunk's transaction, so a retried or doubled
evaluation finds nothing to do and a second worker takes the next chunk), read the closed
window `[t - window - lag, t - lag)` for all the chunk's services at once, step each alert
through the pure state machine, write instances, history and changed health in bulk, plan
notifications (sent after the chunk commits), commit, and claim the next chunk.

Several workers share a minute by shard (`PERFHUB_ALERTS_SHARDS`): the beat task enqueues one
`alerts.evaluate_shard` task per shard, and shard k of n evaluates the rules of the services
whose id is k modulo n (stable while n is: each worker reads the same services' rows every
minute), so n workers each do about 1/n of the rounds' work. The claim stays the guard: a
shard evaluated twice, or alongside an unsharded evaluation, does nothing twice.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Mod
from django.utils import timezone

from alerts import bulk, kinds, notifications, rules, slo, sources
from alerts.instruments import EVALUATION_SECONDS
from alerts.models import AlertEvent, AlertInstance, Rule, Silence
from analysis.alerting import Health, InstanceState, Observation, State, step
from dossiers.models import Service, Slo, Team

log = logging.getLogger(__name__)


def evaluation_lag() -> timedelta:
    return timedelta(seconds=getattr(settings, "PERFHUB_ALERTS_EVALUATION_LAG_S", 120))


def no_data_lookback() -> timedelta:
    return timedelta(seconds=getattr(settings, "PERFHUB_ALERTS_NO_DATA_LOOKBACK_S", 3600))


def align_to_minute(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0)


# ---------------------------------------------------------------------------- default rules


def default_rule_specs(service: Service) -> list[dict]:
    """The rules every service starts with: each registered kind's defaults for this service
    (from its SLOs, price and the usual GPU pitfalls)."""
    return [
        {"kind": kind.name, **spec}
        for kind in kinds.ordered()
        for spec in kind.default_specs(service)
    ]


def ensure_default_rules(service: Service) -> list[Rule]:
    """Create the default rules the service lacks (by name); returns the ones created."""
    existing = set(service.alert_rules.values_list("name", flat=True))
    new = [
        Rule(service=service, is_default=True, **spec)
        for spec in default_rule_specs(service)
        if spec["name"] not in existing
    ]
    Rule.objects.bulk_create(new, ignore_conflicts=True)
    return new


def _ensure_defaults_for_new_services() -> None:
    """Services with no rule at all (new ones) get the defaults. Disable a rule to mute it."""
    for service in Service.objects.filter(alert_rules__isnull=True).select_related("team"):
        ensure_default_rules(service)


# ------------------------------------------------------------------------------- evaluation


@dataclass
class EvaluationReport:
    evaluated_at: datetime
    rules: int = 0
    changes: list[tuple[int, str]] = field(default_factory=list)  # (instance id, new state)
    notifications: list[int] = field(default_factory=list)


def evaluation_chunk() -> int:
    """Rules claimed, evaluated and committed together (about 500 services' default rules)."""
    return int(getattr(settings, "PERFHUB_ALERTS_EVALUATION_CHUNK", 4500))


def evaluation_shards() -> int:
    """How many `alerts.evaluate_shard` tasks share each minute (1: the beat task does it)."""
    return max(1, int(getattr(settings, "PERFHUB_ALERTS_SHARDS", 1)))


Shard = tuple[int, int]  # (k, n): the services whose id is k modulo n


def _claim_rules(
    t: datetime, rule_ids: list[int] | None, limit: int, shard: Shard | None = None
) -> list[Rule]:
    """Up to `limit` due rules, a service's rules together, stamped with `t`. On PostgreSQL
    rows another evaluator holds are skipped (SKIP LOCKED), so it takes the next ones."""
    qs = Rule.objects.filter(enabled=True).filter(
        Q(last_evaluated_at__isnull=True) | Q(last_evaluated_at__lt=t)
    )
    if rule_ids is not None:
        qs = qs.filter(pk__any=rule_ids)
    if shard is not None:
        k, n = shard
        qs = qs.alias(shard=Mod(F("service_id"), n)).filter(shard=k)
    locking = connection.features.has_select_for_update_skip_locked
    if locking:
        qs = qs.select_for_update(skip_locked=True, of=("self",))
    claimed = list(qs.order_by("service_id", "pk")[:limit])
    if not claimed:
        return claimed
    if not locking:
        # Without row locks the stamp is the claim: written at once. With them, the locks
        # hold the rows until commit, and the stamp goes out with the health (one UPDATE).
        Rule.objects.filter(pk__any=[r.pk for r in claimed]).update(last_evaluated_at=t)
    # One Service (and Team) object per service, not per rule as select_related gives.
    by_id = {
        s.pk: s
        for s in Service.objects.select_related("team").filter(
            pk__any={r.service_id for r in claimed}
        )
    }
    for rule in claimed:
        rule.last_evaluated_at = t
        rule.service = by_id[rule.service_id]
    return claimed


def _read_inputs(claimed: list[Rule], t: datetime) -> rules.Inputs:
    end = t - evaluation_lag()
    lookback = no_data_lookback()
    inputs = rules.Inputs(window_end=end, no_data_lookback_s=lookback.total_seconds())
    by_window: dict[int, set[int]] = defaultdict(set)
    metrics_by_window: dict[int, set[str]] = defaultdict(set)
    gpu_windows: set[int] = set()
    no_data_services: set[int] = set()
    slo_windows: set[int] = set()
    slo_services: dict[int, Service] = {}
    cost_services: dict[int, Service] = {}
    for rule in claimed:
        kind = rule.kind_spec
        if kind is None:
            continue  # evaluation reports the unknown kind as rule health "error"
        if kind.per_host:
            no_data_services.add(rule.service_id)
            continue
        if kind.reads_slo:
            slo_windows |= set(kind.windows(rule))
            slo_services[rule.service_id] = rule.service
            continue
        by_window[rule.window_s].add(rule.service_id)
        if kind.latency_metric:
            metrics_by_window[rule.window_s].add(kind.latency_metric)
        if kind.reads_gpu:
            gpu_windows.add(rule.window_s)
        if kind.reads_baseline_cost:
            cost_services[rule.service_id] = rule.service
    # "No data" rules read each host's last minute over the lookback: the same rows as a
    # window of that length (the cost rules' hour by default), so one query reads both.
    seen_window = int(lookback.total_seconds()) if no_data_services else None
    if seen_window is not None:
        by_window[seen_window] |= no_data_services
    # Each read in a savepoint of its own: one that fails marks only the rules needing it.
    for window_s, service_ids in by_window.items():
        start = end - timedelta(seconds=window_s)
        keys = [f"window:{window_s}"] + (["last_data"] if window_s == seen_window else [])
        _guarded_read(
            inputs,
            keys,
            lambda start=start, window_s=window_s, service_ids=service_ids: inputs.windows.update(
                {
                    window_s: sources.service_windows(
                        service_ids,
                        start,
                        end,
                        metrics=metrics_by_window[window_s],
                        gpu=window_s in gpu_windows,
                        last_seen=window_s == seen_window,
                    )
                }
            ),
        )
    if seen_window is not None:
        seen = inputs.windows.get(seen_window, {})
        inputs.last_data = {sid: seen[sid].hosts_seen for sid in no_data_services if sid in seen}
    if slo_services:
        _guarded_read(
            inputs,
            [f"slo:{w}" for w in sorted(slo_windows)] + ["slos"],
            lambda: _read_slo_inputs(inputs, slo_services, slo_windows, end),
        )
    if cost_services:
        _guarded_read(
            inputs,
            ["baseline_costs"],
            lambda: setattr(
                inputs, "baseline_costs", sources.baseline_costs(cost_services.values())
            ),
        )
    _guarded_read(
        inputs,
        ["source_errors"],
        lambda: setattr(
            inputs, "source_errors", sources.source_errors({r.service_id for r in claimed})
        ),
    )
    return inputs


def _read_slo_inputs(
    inputs: rules.Inputs, services: dict[int, Service], windows: set[int], end: datetime
) -> None:
    saved: dict[int, list[Slo]] = defaultdict(list)
    for o in Slo.objects.filter(service_id__in=list(services)):
        saved[o.service_id].append(o)
    inputs.slos = {sid: s.slo_objects(saved[sid]) for sid, s in services.items()}
    ids = [sid for sid, objs in inputs.slos.items() if objs]
    inputs.slo_windows = slo.read_windows(ids, end, windows, inputs.slos) if ids else {}


def _guarded_read(inputs: rules.Inputs, keys: list[str], read) -> None:
    try:
        with transaction.atomic():
            read()
    except Exception as exc:
        log.exception("evaluation read %s failed", keys[0])
        for key in keys:
            inputs.failures[key] = f"{type(exc).__name__}: {exc}"[:300]


def _annotations(rule: Rule, obs: Observation) -> dict[str, str]:
    # The word says where the value is, not where the rule looks: an alert kept firing (or
    # pending on its way out) at 270 ms reads "under 300 ms", never "270 ms, above 300 ms".
    above = obs.value > rule.threshold
    breached = above if rule.direction == "above" else obs.value < rule.threshold
    if breached:
        cmp = rule.direction
    else:
        cmp = "under" if rule.direction == "above" else "over"
        cmp = "at" if obs.value == rule.threshold else cmp
    return {
        "summary": f"{rule.service.name}: {rule.name} ({rule.format_value(obs.value)}, "
        f"{cmp} {rule.threshold_display})",
        "description": obs.reason,
        "dossier_url": settings.SITE_URL.rstrip("/") + rule.service.get_absolute_url(),
    }


def _instance_state(inst: AlertInstance | None) -> InstanceState:
    if inst is None:
        return InstanceState()
    return InstanceState(
        state=State(inst.state),
        pending_since=inst.pending_since,
        fired_at=inst.fired_at,
        last_active_at=inst.last_active_at,
        resolved_at=inst.resolved_at,
    )


def _health_of(observations: list[Observation]) -> tuple[Health, str, Observation | None]:
    """A rule's health from its observations: the worst one (error > no data > insufficient)."""
    if not observations:
        return Health.NO_DATA, "no data", None
    order = [Health.ERROR, Health.NO_DATA, Health.INSUFFICIENT_DATA, Health.OK]
    worst = min(observations, key=lambda o: order.index(o.health))
    return worst.health, worst.reason, worst


HEALTH_EVENT = {
    Health.OK: AlertEvent.Kind.OK,
    Health.NO_DATA: AlertEvent.Kind.NO_DATA,
    Health.INSUFFICIENT_DATA: AlertEvent.Kind.INSUFFICIENT_DATA,
    Health.ERROR: AlertEvent.Kind.ERROR,
}


@EVALUATION_SECONDS.time()
def evaluate_all(
    now: datetime | None = None,
    *,
    rule_ids: list[int] | None = None,
    shard: Shard | None = None,
):
    """Evaluate every due rule at `now` aligned to the minute (with `shard` (k, n), only the
    rules of services whose id is k modulo n). Safe to call twice, and from several workers
    at once: each claims a chunk of rules at a time (`evaluation_chunk`), evaluates and
    commits it, and claims the next until none is left."""
    if shard is not None and not (shard[1] >= 1 and 0 <= shard[0] < shard[1]):
        raise ValueError(f"shard {shard!r}: want (k, n) with 0 <= k < n")
    t = align_to_minute(now or timezone.now())
    _ensure_defaults_for_new_services()
    report = EvaluationReport(evaluated_at=t)
    limit = evaluation_chunk()
    while True:
        with transaction.atomic():
            claimed = _claim_rules(t, rule_ids, limit, shard)
            if not claimed:
                return report
            _evaluate_claimed(claimed, t, report)
        if len(claimed) < limit:
            return report


def _evaluate_claimed(claimed: list[Rule], t: datetime, report: EvaluationReport) -> None:
    """Read the claimed rules' inputs (set-based, all their services at once), step their
    alerts, write instances, history and changed health in bulk, and plan notifications."""
    report.rules += len(claimed)
    before = {r.pk: (r.health, r.health_reason, r.last_value) for r in claimed}
    inputs = _read_inputs(claimed, t)
    # By service (the (service, state) index), then to the claimed rules: a few probes per
    # service instead of one per rule.
    rule_ids = {r.pk for r in claimed}
    live = {
        inst.fingerprint: inst
        for inst in AlertInstance.objects.live().filter(
            service_id__any={r.service_id for r in claimed}
        )
        if inst.rule_id in rule_ids
    }
    live_by_rule: dict[int, list[AlertInstance]] = defaultdict(list)
    for inst in live.values():
        live_by_rule[inst.rule_id].append(inst)
    new_instances: list[AlertInstance] = []
    touched: list[AlertInstance] = []
    events: list[AlertEvent] = []
    pending_events: list[tuple[AlertInstance, AlertEvent]] = []

    for rule in claimed:
        # One rule that cannot be evaluated (bad data, a bug in its kind) is recorded as an
        # error on that rule; the staged rows of the others are untouched.
        staged = (len(new_instances), len(touched), len(events), len(pending_events))
        try:
            _evaluate_rule(rule, inputs, live, live_by_rule, t, new_instances, touched,
                           events, pending_events)  # fmt: skip
        except Exception as exc:
            log.exception("evaluating rule %s failed", rule.pk)
            del new_instances[staged[0] :], touched[staged[1] :]
            del events[staged[2] :], pending_events[staged[3] :]
            reason = f"evaluation failed: {type(exc).__name__}: {exc}"[:300]
            if rule.health != Health.ERROR:
                events.append(
                    AlertEvent(rule=rule, service_id=rule.service_id, at=t,
                               kind=AlertEvent.Kind.ERROR, threshold=rule.threshold,
                               reason=reason)
                )  # fmt: skip
            rule.health, rule.health_reason = Health.ERROR, reason

    AlertInstance.objects.bulk_create(new_instances)
    for inst, event in pending_events:
        event.instance_id = inst.pk
    bulk.update_rows(
        touched,
        [
            "state", "value", "threshold", "pending_since", "fired_at", "last_active_at",
            "resolved_at", "ended_at", "last_evaluated_at", "series", "annotations", "labels",
        ],
    )  # fmt: skip
    AlertEvent.objects.bulk_create(events)
    if connection.features.has_select_for_update_skip_locked:
        # The claim's stamp (see `_claim_rules`) with the health, in one statement.
        bulk.update_rows(claimed, ["last_evaluated_at", "health", "health_reason", "last_value"])
    else:
        # Only rules whose health, reason or value moved (the stamp is written already).
        changed = [r for r in claimed if (r.health, r.health_reason, r.last_value) != before[r.pk]]
        bulk.update_rows(changed, ["health", "health_reason", "last_value"])
    report.changes += [(e.instance_id, e.kind) for e in events if e.instance_id]
    report.notifications += notifications.plan(claimed, t)


def _evaluate_rule(
    rule: Rule,
    inputs: rules.Inputs,
    live: dict[str, AlertInstance],
    live_by_rule: dict[int, list[AlertInstance]],
    t: datetime,
    new_instances: list,
    touched: list,
    events: list,
    pending_events: list,
) -> None:
    """Observe one rule, step its alerts and stage their rows, history and health."""
    try:
        observed = rules.observe(rule, inputs)
    except Exception as exc:  # one broken rule must not stop the others
        observed = [({"service": rule.service.slug}, Observation(Health.ERROR, reason=str(exc)))]
    seen_fps = set()
    for identity, obs in observed:
        fp = rules.fingerprint(rule.pk, identity)
        seen_fps.add(fp)
        _advance(rule, identity, fp, obs, live.get(fp), t, new_instances, touched,
                 events, pending_events)  # fmt: skip
    # Live alerts the rule no longer observes (a host gone quiet beyond the lookback).
    for inst in live_by_rule.get(rule.pk, []):
        fp = inst.fingerprint
        if fp not in seen_fps:
            spec = rule.kind_spec
            if spec is not None and spec.per_host:
                obs = rules.silent_for_lookback(inputs)
            elif spec is not None and spec.reads_slo and rule.service_id in inputs.slos:
                # The SLO was deleted or edited away (read fine, just absent): nothing burns
                # it any more, so its alert resolves instead of holding forever.
                obs = Observation(Health.OK, value=0.0, reason="the SLO no longer exists")
            else:
                obs = Observation(Health.NO_DATA, reason="no longer observed")
            _advance(rule, inst.labels, fp, obs, inst, t, new_instances, touched,
                     events, pending_events)  # fmt: skip
    health, reason, worst = _health_of([o for _, o in observed])
    if health != Health.OK and rule.service_id in inputs.source_errors:
        # Missing data with a broken feed: say why, as an error of the rule's source.
        health, reason = Health.ERROR, inputs.source_errors[rule.service_id]
    if health != rule.health:
        events.append(
            AlertEvent(
                rule=rule,
                service_id=rule.service_id,
                at=t,
                kind=HEALTH_EVENT[health],
                value=worst.value if worst else None,
                count=worst.count if worst else None,
                threshold=rule.threshold,
                reason=reason[:300],
            )
        )
    rule.health = health
    rule.health_reason = reason[:300]
    known = [o.value for _, o in observed if o.known]
    rule.last_value = known[0] if len(known) == 1 else (max(known) if known else None)


def _advance(
    rule: Rule,
    identity: dict[str, str],
    fp: str,
    obs: Observation,
    inst: AlertInstance | None,
    t: datetime,
    new_instances: list,
    touched: list,
    events: list,
    pending_events: list,
) -> None:
    """Step one alert; stage its row and, on a state change, its history event."""
    result = step(rule.thresholds(), _instance_state(inst), obs, t)
    if inst is None and not result.state.live:
        return  # nothing to remember for an alert that never started
    if inst is None:
        labels = {**rules.base_labels(rule), **identity}
        inst = AlertInstance(
            rule=rule,
            service_id=rule.service_id,
            fingerprint=fp,
            labels=labels,
            threshold=rule.threshold,
            last_evaluated_at=t,
        )
        new_instances.append(inst)
    else:
        touched.append(inst)
        inst.labels = {**rules.base_labels(rule), **identity}
    s = result.state
    inst.state = s.state
    inst.pending_since = s.pending_since or inst.pending_since
    inst.fired_at = s.fired_at
    inst.last_active_at = s.last_active_at
    inst.resolved_at = s.resolved_at
    inst.threshold = rule.threshold
    inst.last_evaluated_at = t
    if obs.known:
        inst.value = obs.value
        inst.annotations = _annotations(rule, obs)
        series = list(inst.series or [])
        series.append([int(t.timestamp()), obs.value])
        inst.series = series[-AlertInstance.SERIES_MAX_POINTS :]
    if s.state in (State.RESOLVED, State.INACTIVE):
        inst.ended_at = t
    if result.changed:
        event = AlertEvent(
            rule=rule,
            service_id=rule.service_id,
            instance=inst if inst.pk else None,
            at=t,
            kind=s.state.value,
            value=obs.value,
            count=obs.count,
            threshold=rule.threshold if s.state != State.RESOLVED else rule.thresholds().resolve,
            reason=result.reason[:300],
        )
        events.append(event)
        if inst.pk is None:
            pending_events.append((inst, event))


# --------------------------------------------------------------------------------- silences


def silence_create(
    *,
    team: Team,
    matchers: list[dict],
    starts_at: datetime,
    ends_at: datetime,
    comment: str,
    user=None,
) -> Silence:
    silence = Silence(
        team=team,
        matchers=matchers,
        starts_at=starts_at,
        ends_at=ends_at,
        comment=comment,
        created_by=user,
    )
    silence.full_clean()
    silence.save()
    return silence


def silence_expire(*, silence: Silence, now: datetime | None = None) -> Silence:
    """End a silence now (kept as history). A silence that has not started yet is cut to zero."""
    now = now or timezone.now()
    if silence.ends_at > now:
        silence.ends_at = max(now, silence.starts_at + timedelta(microseconds=1))
        silence.save(update_fields=["ends_at"])
    return silence
