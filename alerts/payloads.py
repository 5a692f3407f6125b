"""What a notification says: the Alertmanager webhook body (version 4, plus the dossier URL)
and Alertmanager API v2 postable alerts. Receiver kinds (`alerts.receivers`) pick one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from django.urls import reverse

from core.links import site_url

if TYPE_CHECKING:
    from alerts.models import AlertInstance, Receiver, Rule

ZERO_TIME = "0001-01-01T00:00:00Z"  # Alertmanager's endsAt for an alert still firing


def group_key(rule: Rule) -> str:
    return f'{{}}:{{alertname="{rule.name}", service="{rule.service.slug}"}}'


def rfc3339(ts: datetime | None) -> str:
    if ts is None:
        return ZERO_TIME
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _alert_body(inst: AlertInstance, status: str) -> dict:
    return {
        "status": status,
        "labels": dict(inst.labels),
        "annotations": dict(inst.annotations),
        "startsAt": rfc3339(inst.fired_at or inst.pending_since),
        "endsAt": rfc3339(inst.resolved_at) if status == "resolved" else ZERO_TIME,
        "generatorURL": site_url(inst.get_absolute_url()),
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
    dossier_url = site_url(rule.service.get_absolute_url())
    return {
        "version": "4",
        "groupKey": group_key(rule),
        "truncatedAlerts": 0,
        "status": "firing" if firing else "resolved",
        "receiver": receiver.name,
        "groupLabels": {"alertname": rule.name, "service": rule.service.slug},
        "commonLabels": _common([a["labels"] for a in alerts]),
        "commonAnnotations": _common([a["annotations"] for a in alerts]),
        "externalURL": site_url(reverse("alerts:alert_list")),
        "alerts": alerts,
        "dossierURL": dossier_url,
    }


def alertmanager_body(*, firing: list[AlertInstance], resolved: list[AlertInstance]) -> dict:
    """Alertmanager API v2 postable alerts. A firing alert's `endsAt` is set when it is sent
    (see `alerts.receivers.alertmanager`): it says how long Alertmanager may trust it."""
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
