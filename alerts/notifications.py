"""Notifications: grouping, dedup against the notification log, silences, planning, sending.

Planning runs inside the evaluation's transaction, for the rules that evaluation claimed, so a
doubled evaluation plans nothing (and `Notification` is unique per receiver, group and
evaluation time besides). A group is one rule of one service. Per receiver the log remembers
which fingerprints it was told are firing and when it was last told: a message goes out when a
new alert fires, when one it saw firing resolves (only to that receiver), or when the repeat
interval has passed with alerts still firing. Silenced alerts are neither sent as firing nor
as resolved. An Alertmanager receiver is told about every firing alert at every evaluation, as
Prometheus does (Alertmanager deduplicates, groups and silences), and about a resolved one once,
with its `endsAt`. Sending happens after commit, in a task that claims the row with a conditional
update, so two workers never send the same notification. What a message says and how it
travels is the receiver's kind (`alerts.receivers`; bodies in `alerts.payloads`).

Planning reads in `_read_state`, builds each rule's group (`_group`: firing and silenced), then
asks each receiver of the team (`_plan_receiver`) whether it is owed a message now.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from celery.exceptions import Retry
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from alerts import bulk, receivers
from alerts.instruments import NOTIFICATIONS
from alerts.models import (
    AlertInstance,
    Notification,
    NotificationLog,
    Receiver,
    Rule,
    Silence,
)
from alerts.payloads import group_key
from alerts.receivers import DeliveryError
from analysis.alerting import State
from analysis.silences import all_match, parse_matchers

log = logging.getLogger(__name__)


# ----------------------------------------------------------------------------------- planning


@dataclass
class _State:
    """What planning reads for the claimed rules, fetched once per evaluation."""

    receivers: dict[int, list[Receiver]]  # team id -> its enabled receivers
    firing: dict[int, list[AlertInstance]]  # rule id -> its firing instances
    keys: dict[int, str]  # rule id -> group key
    logs: dict[tuple[int, str], NotificationLog]  # (receiver id, group key) -> what it was told
    resolved_by_fp: dict[str, AlertInstance]  # fingerprint -> its latest resolved instance
    silencers: dict[int, list]  # team id -> the matcher lists of its active silences


@dataclass
class _Planned:
    """The rows planning writes: new notifications, new logs, logs changed in place."""

    notifications: list[Notification] = field(default_factory=list)
    new_logs: list[NotificationLog] = field(default_factory=list)
    changed_logs: list[NotificationLog] = field(default_factory=list)

    def mark(self) -> tuple[int, int, int]:
        return len(self.notifications), len(self.new_logs), len(self.changed_logs)

    def undo_to(self, mark: tuple[int, int, int]) -> None:
        del self.notifications[mark[0] :], self.new_logs[mark[1] :], self.changed_logs[mark[2] :]


def _silencers(team_ids: set[int], t: datetime) -> dict[int, list]:
    out: dict[int, list] = defaultdict(list)
    for silence in Silence.objects.filter(team_id__in=team_ids, starts_at__lte=t, ends_at__gt=t):
        out[silence.team_id].append(parse_matchers(silence.matchers))
    return out


def _read_state(claimed: list[Rule], t: datetime) -> _State | None:
    """Everything planning needs, in a fixed number of queries; None when no team of the
    claimed rules has a receiver."""
    by_rule = {r.pk: r for r in claimed}
    team_ids = {r.service.team_id for r in claimed}
    by_team: dict[int, list[Receiver]] = defaultdict(list)
    for receiver in Receiver.objects.filter(team_id__in=team_ids, enabled=True):
        if receiver.kind not in receivers.KINDS:  # its module is gone: the others still hear
            log.warning("receiver %s: unknown kind %r, not notified", receiver.pk, receiver.kind)
            continue
        by_team[receiver.team_id].append(receiver)
    if not by_team:
        return None
    firing: dict[int, list[AlertInstance]] = defaultdict(list)
    for inst in AlertInstance.objects.filter(
        service_id__any={r.service_id for r in claimed}, state=State.FIRING
    ):
        if inst.rule_id in by_rule:  # by service (its index), then to the claimed rules
            firing[inst.rule_id].append(inst)
    keys = {pk: group_key(r) for pk, r in by_rule.items()}
    logs = {
        (lg.receiver_id, lg.group_key): lg
        for lg in NotificationLog.objects.filter(
            receiver__team_id__any=team_ids, group_key__any=set(keys.values())
        )
    }
    # Alerts a receiver saw firing that no longer fire: their latest resolved instance.
    firing_fps = {i.fingerprint for insts in firing.values() for i in insts}
    gone = {fp for lg in logs.values() for fp in lg.firing} - firing_fps
    resolved_by_fp: dict[str, AlertInstance] = {}
    if gone:
        for inst in AlertInstance.objects.filter(
            fingerprint__any=gone, state=State.RESOLVED
        ).order_by("fingerprint", "-resolved_at"):
            resolved_by_fp.setdefault(inst.fingerprint, inst)
    return _State(by_team, firing, keys, logs, resolved_by_fp, _silencers(team_ids, t))


@dataclass
class _Group:
    """One rule's group at this evaluation: its firing alerts, and those not silenced."""

    rule: Rule
    key: str
    firing: list[AlertInstance]
    loud: list[AlertInstance]
    silenced: Callable[[AlertInstance], bool]


def _group(state: _State, rule: Rule) -> _Group:
    matchers = state.silencers.get(rule.service.team_id, [])

    def silenced(inst: AlertInstance) -> bool:
        return any(all_match(m, inst.labels) for m in matchers)

    firing = state.firing.get(rule.pk, [])
    loud = [i for i in firing if not silenced(i)]
    return _Group(rule, state.keys[rule.pk], firing, loud, silenced)


def _plan_receiver(
    planned: _Planned, state: _State, group: _Group, receiver: Receiver, t: datetime
) -> None:
    """Decide whether `receiver` is told about the group now, and what it will remember.

    It is told when an alert it has not seen fires, when one it saw resolves (if it wants
    resolutions), or when its repeat interval has passed with alerts still firing; a kind
    told `every_evaluation` (Alertmanager) hears every firing alert each time, and every
    resolution. Silenced alerts are told neither way.
    """
    kind = receivers.get(receiver.kind)
    lg = state.logs.get((receiver.pk, group.key))
    seen = set(lg.firing) if lg else set()
    loud_fps = {i.fingerprint for i in group.loud}
    gone_fps = seen - {i.fingerprint for i in group.firing}
    resolved = []
    if receiver.send_resolved or kind.every_evaluation:
        resolved = [
            state.resolved_by_fp[fp]
            for fp in sorted(gone_fps)
            if fp in state.resolved_by_fp and not group.silenced(state.resolved_by_fp[fp])
        ]
    repeat_due = bool(group.loud) and (
        kind.every_evaluation
        or lg is None
        or lg.last_sent_at is None
        or t - lg.last_sent_at >= timedelta(seconds=receiver.repeat_interval_s)
    )
    send = bool((loud_fps - seen) or resolved or repeat_due)
    # What the receiver knows is firing after this: the loud ones, and any it saw that are
    # now silenced (so lifting a silence does not count as news).
    quiet_fps = {i.fingerprint for i in group.firing} - loud_fps
    remembered = sorted(loud_fps | (seen & quiet_fps))
    if send:
        planned.notifications.append(
            Notification(
                receiver=receiver,
                service_id=group.rule.service_id,
                rule=group.rule,
                group_key=group.key,
                evaluated_at=t,
                alert_status="firing" if group.loud else "resolved",
                payload=kind.payload(
                    receiver=receiver, rule=group.rule, firing=group.loud, resolved=resolved
                ),
            )
        )
    if lg is None:
        if remembered or send:
            planned.new_logs.append(
                NotificationLog(
                    receiver=receiver,
                    group_key=group.key,
                    firing=remembered,
                    last_sent_at=t if send else None,
                )
            )
    elif send or remembered != sorted(seen):
        lg.firing = remembered
        if send:
            lg.last_sent_at = t
        planned.changed_logs.append(lg)


def plan(claimed: list[Rule], t: datetime) -> list[int]:
    """Create the notifications this evaluation owes; enqueue them after commit. Returns ids."""
    state = _read_state(claimed, t)
    if state is None:
        return []
    planned = _Planned()
    for rule in claimed:
        if not state.receivers.get(rule.service.team_id):
            continue
        # A rule whose notification cannot be planned (a bad label, a template error, a kind
        # no module registers) is logged and skipped; the other rules' still go out.
        mark = planned.mark()
        try:
            group = _group(state, rule)
            for receiver in state.receivers[rule.service.team_id]:
                _plan_receiver(planned, state, group, receiver, t)
        except Exception:
            log.exception("planning notifications for rule %s failed", rule.pk)
            planned.undo_to(mark)

    NotificationLog.objects.bulk_create(planned.new_logs)
    bulk.update_rows(planned.changed_logs, ["firing", "last_sent_at"])
    Notification.objects.bulk_create(planned.notifications)
    ids = [n.pk for n in planned.notifications]
    if ids:
        transaction.on_commit(lambda: enqueue(ids), robust=True)
    return ids


def enqueue(ids: list[int]) -> None:
    """Hand the notifications to Celery, after commit.

    Without a broker (eager mode: the embedded default, the demo, tests) each task runs here,
    retried at once under the task's own retry policy, and a final failure is recorded on the
    row instead of being raised into the evaluation that planned it.
    """
    from alerts.tasks import send_notification

    if not send_notification.app.conf.task_always_eager:
        for pk in ids:
            send_notification.delay(pk)
        return
    for pk in ids:
        retries = 0
        while True:
            try:
                send_notification.apply(args=[pk], retries=retries, throw=True)
                break
            except Retry:
                retries += 1
            except DeliveryError:
                break  # out of retries: the row says failed, with the error
            except Exception:  # one notification's failure never stops the next one
                log.exception("sending notification %s failed", pk)
                break


# ------------------------------------------------------------------------------------ sending


def claim(notification_id: int, now: datetime) -> Notification | None:
    """Take the notification for sending; None when another worker has it or it is done."""
    claimed = Notification.objects.filter(
        pk=notification_id,
        status__in=[Notification.Status.QUEUED, Notification.Status.RETRYING],
    ).update(status=Notification.Status.SENDING, claimed_at=now, attempts=F("attempts") + 1)
    if not claimed:
        return None
    return Notification.objects.select_related("receiver", "service").get(pk=notification_id)


def deliver(notification_id: int, *, final_attempt: bool = False) -> str:
    """Claim and send one notification. Raises DeliveryError (recorded on the row) on failure."""
    now = timezone.now()
    n = claim(notification_id, now)
    if n is None:
        return "skipped"
    try:
        receivers.get(n.receiver.kind).send(n.receiver, n.payload)
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:2000]
        status = Notification.Status.FAILED if final_attempt else Notification.Status.RETRYING
        Notification.objects.filter(pk=n.pk).update(status=status, last_error=error)
        NOTIFICATIONS.labels(n.receiver.kind, "failed").inc()
        log.warning("notification %s to %s failed: %s", n.pk, n.receiver, error)
        raise DeliveryError(error) from exc
    Notification.objects.filter(pk=n.pk).update(
        status=Notification.Status.SENT, sent_at=timezone.now()
    )
    NOTIFICATIONS.labels(n.receiver.kind, "sent").inc()
    return "sent"


def stuck_after() -> timedelta:
    """How long a notification may wait (or be sending) before it counts as left behind; longer
    than any delivery takes, so a send in progress is never started a second time."""
    return timedelta(seconds=settings.PERFHUB_NOTIFICATIONS_STUCK_AFTER_S)


def requeue_stuck(now: datetime | None = None) -> list[int]:
    """Notifications a lost message or a dead worker left behind: send them again.

    Queued or retrying rows untouched for `stuck_after()` (their broker message lost: a
    restarted Redis keeps no queue), and rows claimed for sending that
    long ago (the worker died mid-send), are put back to retrying and enqueued; the claim in
    `deliver` still guarantees one sender at a time.
    """
    now = now or timezone.now()
    cutoff = now - stuck_after()
    waiting = Q(status__in=[Notification.Status.QUEUED, Notification.Status.RETRYING]) & (
        Q(claimed_at__lt=cutoff) | Q(claimed_at__isnull=True, created_at__lt=cutoff)
    )
    dead = Q(status=Notification.Status.SENDING, claimed_at__lt=cutoff)
    ids = list(Notification.objects.filter(waiting | dead).values_list("pk", flat=True)[:1000])
    if ids:
        Notification.objects.filter(pk__in=ids).filter(waiting | dead).update(
            status=Notification.Status.RETRYING, claimed_at=now
        )
        enqueue(ids)
    return ids
