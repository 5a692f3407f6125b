"""An Alertmanager: API v2 postable alerts, told every evaluation as Prometheus does."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import timezone

from alerts.payloads import alertmanager_body, rfc3339
from alerts.receivers import ReceiverKind, post_json, register


@register
class Alertmanager(ReceiverKind):
    name = "alertmanager"
    label = "Alertmanager (API v2; URL: its base URL)"
    # Alertmanager deduplicates, groups and silences; it needs every firing alert each
    # evaluation and every resolution (its own config decides whether to tell anyone).
    every_evaluation = True

    def clean(self, receiver) -> None:
        if not receiver.url:
            raise ValidationError({"url": "An Alertmanager receiver needs its base URL."})
        super().clean(receiver)

    def payload(self, *, receiver, rule, firing, resolved) -> dict:
        return alertmanager_body(firing=firing, resolved=resolved)

    def send(self, receiver, payload: dict) -> None:
        """Firing alerts stay valid for PERFHUB_ALERTMANAGER_VALID_FOR_S past the send, so
        Alertmanager resolves them itself if PerfHub stops evaluating (Prometheus sends 4
        evaluation intervals the same way)."""
        valid_for = timedelta(seconds=settings.PERFHUB_ALERTMANAGER_VALID_FOR_S)
        ends = rfc3339(timezone.now() + valid_for)
        alerts = [{**a, "endsAt": a["endsAt"] or ends} for a in payload["alerts"]]
        post_json(receiver.url.rstrip("/") + "/api/v2/alerts", alerts)
