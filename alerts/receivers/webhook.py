"""A webhook: the Alertmanager webhook body (version 4, plus the dossier URL), POSTed."""

from __future__ import annotations

from alerts.payloads import webhook_body
from alerts.receivers import ReceiverKind, post_json, register


@register
class Webhook(ReceiverKind):
    name = "webhook"
    label = "webhook (Alertmanager body)"

    def payload(self, *, receiver, rule, firing, resolved) -> dict:
        return webhook_body(receiver=receiver, rule=rule, firing=firing, resolved=resolved)

    def send(self, receiver, payload: dict) -> None:
        post_json(receiver.url, payload)
