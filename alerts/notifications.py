"""Notifications: grouping, dedup against the notification log, silences, the webhook body, sending.

Planning runs inside the evaluation's transaction, for the rules that evaluation claimed, so a
doubled evaluation plans nothing (and `Notification` is unique per receiver, group and
evaluation time besides). A group is one rule of one service. Per receiver the log remembers
which fingerprints it was told are firing and when it was last told: a message goes out when a
new alert fires, when one it saw firing resolves (only to that receiver), or when the repeat
interval has passed with alerts still firing. Silenced alerts are neither sent as firing nor
as resolved. An Alertmanager receiver is told about every firing alert at every evaluation, as
Prometheus does (Alertmanager deduplicates, groups and silences), and about a resolved one once,
with its `endsAt`. Sending happens after commit, in a task that claims the row with a conditional
update, so two workers never send the same notification.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import UTC, datetime, timedelta

import requests
from celery.exceptions import Retry
from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import F, Q
from django.urls import reverse
from django.utils import timezone

from alerts import bulk
from alerts.instruments import NOTIFICATIONS
from alerts.models import (
    AlertInstance,
    Notification,
    NotificationLog,
    Receiver,
    Rule,
    Silence,
)
from analysis.alerting import State
from analysis.silences import all_match, parse_matchers
from dossiers.outbound import OutboundRefused, answered, failure_reason, outbound_request

log = logging.getLogger(__name__)

WEBHOOK_TIMEOUT_S = 10
ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt for an alert still firing


class DeliveryError(Exception):
    """A receiver could not be reached or refused the message; the task retries."""


def group_key(rule: Rule) -> str:
    return f'{{}}:{{alertname="{rule.name}", service="{rule.service.slug}"}}'


def _rfc3339(ts: datetime | None) -> str:
    if ts is None:
        return ZERO_TIME
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _site(path: str) -> str:
    return settings.SITE_URL.rstrip("/") + path


def _alert_body(inst: AlertInstance, status: str) -> dict:
    return {
        "status": status,
        "labels": dict(inst.labels),
        "annotations": dict(inst.annotations),
        "startsAt": _rfc3339(inst.fired_at or inst.pending_since),
        "endsAt": _rfc3339(inst.resolved_at) if status == "resolved" else ZERO_TIME,
        "generatorURL": _site(inst.get_absolute_url()),
        "fingerprint": inst.fingerprint,
    }


def _common(dicts: list[dict]) -> dict:
    if not dicts:
        return {}
    common = dict(dicts[0])
    for d in dicts[1:]:
        common = {k: v for k, v in common.items() if d.get(k) == v}
    return common


def webhook_body(
    *, receiver: Receiver, rule: Rule, firing: list[AlertInstance], resolved: list[AlertInstance]
) -> dict:
    """The Alertmanager webhook body (version 4), plus the dossier URL."""
    alerts = [_alert_body(i, "firing") for i in firing]
    alerts += [_alert_body(i, "resolved") for i in resolved]
    dossier_url = _site(rule.service.get_absolute_url())
    return {
        "version": "4",
        "groupKey": group_key(rule),
        "truncatedAlerts": 0,
        "status": "firing" if firing else "resolved",
        "receiver": receiver.name,
        "groupLabels": {"alertname": rule.name, "service": rule.service.slug},
        "commonLabels": _common([a["labels"] for a in alerts]),
        "commonAnnotations": _common([a["annotations"] for a in alerts]),
        "externalURL": _site(reverse("alerts:alert_list")),
        "alerts": alerts,
        "dossierURL": dossier_url,
    }


def alertmanager_body(*, firing: list[AlertInstance], resolved: list[AlertInstance]) -> dict:
    """Alertmanager API v2 postable alerts. A firing alert's `endsAt` is set when it is sent
    (see `_post_alertmanager`): it says how long Alertmanager may trust it without news."""
    alerts = []
    for inst, status in [(i, "firing") for i in firing] + [(i, "resolved") for i in resolved]:
        alert = _alert_body(inst, status)
        alerts.append(
            {
                "labels": alert["labels"],
                "annotations": alert["annotations"],
                "startsAt": alert["startsAt"],
                "endsAt": alert["endsAt"] if status == "resolved" else None,
                "generatorURL": alert["generatorURL"],
            }
        )
    return {"alerts": alerts, "status": "firing" if firing else "resolved"}


def _silencers(team_ids: set[int], t: datetime) -> dict[int, list]:
    out: dict[int, list] = defaultdict(list)
    for silence in Silence.objects.filter(team_id__in=team_ids, starts_at__lte=t, ends_at__gt=t):
        out[silence.team_id].append(parse_matchers(silence.matchers))
    return out


def plan(claimed: list[Rule], t: datetime) -> list[int]:
    """Create the notifications this evaluation owes; enqueue them after commit. Returns ids."""
    by_rule = {r.pk: r for r in claimed}
    team_ids = {r.service.team_id for r in claimed}
    receivers: dict[int, list[Receiver]] = defaultdict(list)
    for receiver in Receiver.objects.filter(team_id__in=team_ids, enabled=True):
        receivers[receiver.team_id].append(receiver)
    if not receivers:
        return []

    firing: dict[int, list[AlertInstance]] = defaultdict(list)
    for inst in AlertInstance.objects.filter(
        service_id__in={r.service_id for r in claimed}, state=State.FIRING
    ):
        if inst.rule_id in by_rule:  # by service (its index), then to the claimed rules
            firing[inst.rule_id].append(inst)
    keys = {pk: group_key(r) for pk, r in by_rule.items()}
    logs = {
        (lg.receiver_id, lg.group_key): lg
        for lg in NotificationLog.objects.filter(
            receiver__team_id__in=team_ids, group_key__in=set(keys.values())
        )
    }
    # Alerts a receiver saw firing that no longer fire: their latest resolved instance.
    firing_fps = {i.fingerprint for insts in firing.values() for i in insts}
    gone = {fp for lg in logs.values() for fp in lg.firing} - firing_fps
    resolved_by_fp: dict[str, AlertInstance] = {}
    if gone:
        for inst in AlertInstance.objects.filter(
            fingerprint__in=gone, state=State.RESOLVED
        ).order_by("fingerprint", "-resolved_at"):
            resolved_by_fp.setdefault(inst.fingerprint, inst)
    silencers = _silencers(team_ids, t)

    notifications: list[Notification] = []
    new_logs: list[NotificationLog] = []
    changed_logs: list[NotificationLog] = []
    for rule in claimed:
        # A rule whose notification cannot be planned (a bad label, a template error) is
        # logged and skipped; the other rules' notifications still go out.
        team_id = rule.service.team_id
        if not receivers.get(team_id):
            continue
        staged = (len(notifications), len(new_logs), len(changed_logs))
        try:
            matchers = silencers.get(team_id, [])

            def silenced(inst: AlertInstance, matchers=matchers) -> bool:
                return any(all_match(m, inst.labels) for m in matchers)

            all_firing = firing.get(rule.pk, [])
            loud = [i for i in all_firing if not silenced(i)]
            quiet_fps = {i.fingerprint for i in all_firing} - {i.fingerprint for i in loud}
            key = keys[rule.pk]
            for receiver in receivers[team_id]:
                lg = logs.get((receiver.pk, key))
                seen = set(lg.firing) if lg else set()
                gone_fps = seen - {i.fingerprint for i in all_firing}
                resolved = [
                    resolved_by_fp[fp]
                    for fp in sorted(gone_fps)
                    if fp in resolved_by_fp and not silenced(resolved_by_fp[fp])
                ]
                if not receiver.send_resolved:
                    resolved = []
                to_alertmanager = receiver.kind == Receiver.Kind.ALERTMANAGER
                if to_alertmanager:
                    # Alertmanager needs the resolution (its own config decides whether to tell).
                    resolved = [
                        resolved_by_fp[fp]
                        for fp in sorted(gone_fps)
                        if fp in resolved_by_fp and not silenced(resolved_by_fp[fp])
                    ]
                new_firing = {i.fingerprint for i in loud} - seen
                repeat_due = bool(loud) and (
                    to_alertmanager  # re-sent every evaluation, as Prometheus does
                    or lg is None
                    or lg.last_sent_at is None
                    or t - lg.last_sent_at >= timedelta(seconds=receiver.repeat_interval_s)
                )
                send = bool(new_firing or resolved or repeat_due)
                # What the receiver knows is firing after this: the loud ones, and any it saw
                # that are now silenced (so lifting a silence does not count as news).
                remembered = sorted({i.fingerprint for i in loud} | (seen & quiet_fps))
                if send:
                    notifications.append(
                        Notification(
                            receiver=receiver,
                            service_id=rule.service_id,
                            rule=rule,
                            group_key=key,
                            evaluated_at=t,
                            alert_status="firing" if loud else "resolved",
                            payload=alertmanager_body(firing=loud, resolved=resolved)
                            if to_alertmanager
                            else webhook_body(
                                receiver=receiver, rule=rule, firing=loud, resolved=resolved
                            ),
                        )
                    )
                if lg is None:
                    if remembered or send:
                        new_logs.append(
                            NotificationLog(
                                receiver=receiver,
                                group_key=key,
                                firing=remembered,
                                last_sent_at=t if send else None,
                            )
                        )
                elif send or remembered != sorted(seen):
                    lg.firing = remembered
                    if send:
                        lg.last_sent_at = t
                    changed_logs.append(lg)
        except Exception:
            log.exception("planning notifications for rule %s failed", rule.pk)
            del notifications[staged[0] :], new_logs[staged[1] :], changed_logs[staged[2] :]

    NotificationLog.objects.bulk_create(new_logs)
    bulk.update_rows(changed_logs, ["firing", "last_sent_at"])
    Notification.objects.bulk_create(notifications)
    ids = [n.pk for n in notifications]
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
        if n.receiver.kind == Receiver.Kind.WEBHOOK:
            _post_webhook(n.receiver.url, n.payload)
        elif n.receiver.kind == Receiver.Kind.ALERTMANAGER:
            _post_alertmanager(n.receiver.url, n.payload)
        else:
            _send_email(n)
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


STUCK_AFTER = timedelta(minutes=10)


def requeue_stuck(now: datetime | None = None) -> list[int]:
    """Notifications a lost message or a dead worker left behind: send them again.

    Queued or retrying rows untouched for `STUCK_AFTER`, and rows claimed for sending that
    long ago (the worker died mid-send), are put back to retrying and enqueued; the claim in
    `deliver` still guarantees one sender at a time.
    """
    now = now or timezone.now()
    cutoff = now - STUCK_AFTER
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


def _post_webhook(url: str, payload: dict | list) -> None:
    try:
        response = outbound_request("POST", url, json=payload, timeout=WEBHOOK_TIMEOUT_S)
    except (requests.RequestException, OutboundRefused) as exc:
        raise DeliveryError(f"{url}: {failure_reason(exc)}") from exc
    if response.status_code >= 300:  # the answer's body is not kept: status only
        raise DeliveryError(f"{url} {answered(response.status_code)}")


def _post_alertmanager(base_url: str, payload: dict) -> None:
    """POST the alerts to Alertmanager's API v2. Firing alerts stay valid for
    PERFHUB_ALERTMANAGER_VALID_FOR_S past the send, so Alertmanager resolves them itself if
    PerfHub stops evaluating (Prometheus sends 4 evaluation intervals the same way)."""
    valid_for = timedelta(seconds=settings.PERFHUB_ALERTMANAGER_VALID_FOR_S)
    ends = _rfc3339(timezone.now() + valid_for)
    alerts = [{**a, "endsAt": a["endsAt"] or ends} for a in payload["alerts"]]
    _post_webhook(base_url.rstrip("/") + "/api/v2/alerts", alerts)


def _send_email(n: Notification) -> None:
    body = n.payload
    alerts = body["alerts"]
    firing = sum(1 for a in alerts if a["status"] == "firing")
    name = body["groupLabels"].get("alertname", "alert")
    service = body["groupLabels"].get("service", "")
    subject = (
        f"[FIRING:{firing}] {name} ({service})" if firing else f"[RESOLVED] {name} ({service})"
    )
    lines = [subject, ""]
    for a in alerts:
        lines.append(f"- {a['status'].upper()}: {a['annotations'].get('summary', '')}")
        if a["annotations"].get("description"):
            lines.append(f"  {a['annotations']['description']}")
        lines.append(f"  since {a['startsAt']}  {a['generatorURL']}")
    lines += ["", f"Dossier: {body['dossierURL']}", f"Alerts: {body['externalURL']}"]
    send_mail(
        subject,
        "\n".join(lines),
        settings.DEFAULT_FROM_EMAIL,
        n.receiver.email_list,
        fail_silently=False,
    )
