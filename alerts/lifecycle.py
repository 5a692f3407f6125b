"""One alert's life: stepping it through an observation at a time (pending, firing, resolved),
staging its row and history events, and writing what a round staged in bulk.

Evaluation steps every live alert this way at each minute (`alerts.evaluation`); `replay` steps
a new alert through past observations at their own times (the demo's history), so both write
the same rows the same way. Neither sends anything: notifications are planned only by a live
evaluation, from the alerts firing at that moment (`notifications.plan`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.db import transaction

from alerts import bulk, rules
from alerts.models import AlertEvent, AlertInstance, Rule
from analysis.alerting import InstanceState, Observation, State, step
from core.links import site_url

INSTANCE_FIELDS = [
    "state", "value", "threshold", "pending_since", "fired_at", "last_active_at",
    "resolved_at", "ended_at", "last_evaluated_at", "series", "annotations", "labels",
]  # fmt: skip


@dataclass
class Staged:
    """Rows a round staged, written together by `write`: alerts new and changed, and history
    events (an event of a new alert gets the alert's id once it is inserted)."""

    new_instances: list[AlertInstance] = field(default_factory=list)
    touched: list[AlertInstance] = field(default_factory=list)
    events: list[AlertEvent] = field(default_factory=list)
    pending_events: list[tuple[AlertInstance, AlertEvent]] = field(default_factory=list)

    def mark(self) -> tuple[int, int, int, int]:
        return (
            len(self.new_instances),
            len(self.touched),
            len(self.events),
            len(self.pending_events),
        )

    def undo_to(self, mark: tuple[int, int, int, int]) -> None:
        """Drop what was staged after `mark` (a rule that failed half-way)."""
        del self.new_instances[mark[0] :], self.touched[mark[1] :]
        del self.events[mark[2] :], self.pending_events[mark[3] :]

    def write(self) -> None:
        AlertInstance.objects.bulk_create(self.new_instances)
        for inst, event in self.pending_events:
            event.instance_id = inst.pk
        bulk.update_rows(self.touched, INSTANCE_FIELDS)
        AlertEvent.objects.bulk_create(self.events)


def annotations(rule: Rule, obs: Observation) -> dict[str, str]:
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
        "dossier_url": site_url(rule.service.get_absolute_url()),
    }


def instance_state(inst: AlertInstance | None) -> InstanceState:
    if inst is None:
        return InstanceState()
    return InstanceState(
        state=State(inst.state),
        pending_since=inst.pending_since,
        fired_at=inst.fired_at,
        last_active_at=inst.last_active_at,
        resolved_at=inst.resolved_at,
    )


def advance(
    rule: Rule,
    identity: dict[str, str],
    fp: str,
    obs: Observation,
    inst: AlertInstance | None,
    t: datetime,
    staged: Staged,
) -> AlertInstance | None:
    """Step one alert at `t`; stage its row and, on a state change, its history event.
    Returns the alert (None when there was none and it did not start)."""
    result = step(rule.thresholds(), instance_state(inst), obs, t, fmt=rule.format_value)
    if inst is None and not result.state.live:
        return None  # nothing to remember for an alert that never started
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
        staged.new_instances.append(inst)
    else:
        staged.touched.append(inst)
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
        inst.annotations = annotations(rule, obs)
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
        staged.events.append(event)
        if inst.pk is None:
            staged.pending_events.append((inst, event))
    return inst


@transaction.atomic
def replay(
    rule: Rule, identity: dict[str, str], observations: Iterable[tuple[datetime, Observation]]
) -> list[AlertInstance]:
    """Alerts of `rule` (labels `identity`) stepped through past `(at, observation)` pairs in
    time order, as evaluation steps them each minute (an alert that ended is followed by a new
    one), and written as evaluation writes them: the alerts' rows and their history events at
    their own times. Returns the alerts written.

    For history only (the demo's): the rule's own stamp and health are left to the live
    evaluation, and nothing is notified (planning reads the alerts firing at a live round;
    a replay that ends firing is notified by the next one, as any firing alert).
    """
    fp = rules.fingerprint(rule.pk, identity)
    staged = Staged()
    live: AlertInstance | None = None
    for at, obs in observations:
        inst = advance(rule, identity, fp, obs, live, at, staged)
        live = inst if inst is not None and inst.state in AlertInstance.LIVE_STATES else None
    # Each step after an alert's first touched that same new alert: inserted once, as it ends.
    staged.touched = [i for i in staged.touched if i.pk is not None]
    staged.write()
    return staged.new_instances
