"""The evaluation of every due rule.

`evaluate_all(now)` is the one entry point of evaluation (the Celery beat task and the demo
runner both call it). Per call: align `now` to the minute (t), then chunk by chunk: claim up to
`evaluation_chunk()` enabled rules not yet evaluated at t (a conditional claim: rows locked
with SKIP LOCKED and stamped with t in the chunk's transaction, so a retried or doubled
evaluation finds nothing to do and a second worker takes the next chunk; each chunk reads on
from where the last ended in (service, rule) order, and a last pass from the first rule takes
what another evaluator let go unstamped), read the closed
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
from datetime import datetime

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Mod
from django.utils import timezone

from alerts import bulk, notifications, rules
from alerts.default_rules import ensure_defaults_for_new_services
from alerts.evaluation_inputs import read_inputs
from alerts.instruments import EVALUATION_SECONDS
from alerts.lifecycle import Staged, advance
from alerts.models import AlertEvent, AlertInstance, Rule
from analysis.alerting import Health, Observation
from dossiers.models import Service

log = logging.getLogger(__name__)


def align_to_minute(now: datetime) -> datetime:
    return now.replace(second=0, microsecond=0)


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


Position = tuple[int, int]  # (service id, rule id) of the last rule a chunk claimed


def _claim_rules(
    t: datetime,
    rule_ids: list[int] | None,
    limit: int,
    shard: Shard | None = None,
    after: Position | None = None,
) -> list[Rule]:
    """Up to `limit` due rules, a service's rules together, stamped with `t`. On PostgreSQL
    rows another evaluator holds are skipped (SKIP LOCKED), so it takes the next ones.
    `after`: only rules past that position in (service, rule) order, so each chunk of a round
    reads on from where the last one ended instead of passing over every rule stamped before
    it (a quadratic walk at 10,000 services)."""
    qs = Rule.objects.filter(enabled=True).filter(
        Q(last_evaluated_at__isnull=True) | Q(last_evaluated_at__lt=t)
    )
    if after is not None:
        service_id, pk = after
        qs = qs.filter(
            Q(service_id__gt=service_id) | Q(service_id=service_id, pk__gt=pk),
            service_id__gte=service_id,  # the range the service index scans
        )
    if rule_ids is not None:
        qs = qs.filter(pk__any=rule_ids)
    if shard is not None:
        k, n = shard
        qs = qs.alias(shard=Mod(F("service_id"), n)).filter(shard=k)
    locking = connection.features.has_select_for_update_skip_locked
    if locking:
        qs = qs.select_for_update(skip_locked=True, of=("self",))
    # Not the two bookkeeping times evaluation never reads: 180,000 fewer values to convert
    # a round at 10,000 services.
    claimed = list(qs.defer("created_at", "updated_at").order_by("service_id", "pk")[:limit])
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
    ensure_defaults_for_new_services()
    report = EvaluationReport(evaluated_at=t)
    limit = evaluation_chunk()
    after: Position | None = None
    while True:
        with transaction.atomic():
            claimed = _claim_rules(t, rule_ids, limit, shard, after)
            if claimed:
                _evaluate_claimed(claimed, t, report)
        if len(claimed) == limit:
            after = (claimed[-1].service_id, claimed[-1].pk)
        elif after is None:
            return report  # a pass from the first rule found them all
        else:
            # Once more from the first rule: what another evaluator held and then let go
            # without stamping (it failed and rolled back) is due still.
            after = None


def _evaluate_claimed(claimed: list[Rule], t: datetime, report: EvaluationReport) -> None:
    """Read the claimed rules' inputs (set-based, all their services at once), step their
    alerts, write instances, history and changed health in bulk, and plan notifications."""
    report.rules += len(claimed)
    before = {r.pk: (r.health, r.health_reason, r.last_value) for r in claimed}
    inputs = read_inputs(claimed, t)
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
    staged = Staged()

    for rule in claimed:
        # One rule that cannot be evaluated (bad data, a bug in its kind) is recorded as an
        # error on that rule; the staged rows of the others are untouched.
        mark = staged.mark()
        try:
            _evaluate_rule(rule, inputs, live, live_by_rule, t, staged)
        except Exception as exc:
            log.exception("evaluating rule %s failed", rule.pk)
            staged.undo_to(mark)
            reason = f"evaluation failed: {type(exc).__name__}: {exc}"[:300]
            if rule.health != Health.ERROR:
                staged.events.append(
                    AlertEvent(rule=rule, service_id=rule.service_id, at=t,
                               kind=AlertEvent.Kind.ERROR, threshold=rule.threshold,
                               reason=reason)
                )  # fmt: skip
            rule.health, rule.health_reason = Health.ERROR, reason

    staged.write()
    if connection.features.has_select_for_update_skip_locked:
        # The claim's stamp (see `_claim_rules`) with the health, in one statement.
        bulk.update_rows(claimed, ["last_evaluated_at", "health", "health_reason", "last_value"])
    else:
        # Only rules whose health, reason or value moved (the stamp is written already).
        changed = [r for r in claimed if (r.health, r.health_reason, r.last_value) != before[r.pk]]
        bulk.update_rows(changed, ["health", "health_reason", "last_value"])
    report.changes += [(e.instance_id, e.kind) for e in staged.events if e.instance_id]
    report.notifications += notifications.plan(claimed, t)


def _evaluate_rule(
    rule: Rule,
    inputs: rules.Inputs,
    live: dict[str, AlertInstance],
    live_by_rule: dict[int, list[AlertInstance]],
    t: datetime,
    staged: Staged,
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
        advance(rule, identity, fp, obs, live.get(fp), t, staged)
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
            advance(rule, inst.labels, fp, obs, inst, t, staged)
    health, reason, worst = _health_of([o for _, o in observed])
    if health != Health.OK and rule.service_id in inputs.source_errors:
        # Missing data with a broken feed: say why, as an error of the rule's source.
        health, reason = Health.ERROR, inputs.source_errors[rule.service_id]
    if health != rule.health:
        staged.events.append(
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
