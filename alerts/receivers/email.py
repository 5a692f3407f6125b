"""Email: the webhook body, written out as a plain-text message to the team's addresses."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.mail import send_mail

from alerts.payloads import webhook_body
from alerts.receivers import ReceiverKind, register


@register
class Email(ReceiverKind):
    name = "email"
    label = "email"
    target_field = "emails"

    def clean(self, receiver) -> None:
        if not receiver.email_list:
            raise ValidationError({"emails": "An email receiver needs at least one address."})

    def target_masked(self, receiver) -> str:
        return ", ".join("…@" + e.rpartition("@")[2] for e in receiver.email_list)

    def payload(self, *, receiver, rule, firing, resolved) -> dict:
        return webhook_body(receiver=receiver, rule=rule, firing=firing, resolved=resolved)

    def send(self, receiver, payload: dict) -> None:
        alerts = payload["alerts"]
        firing = sum(1 for a in alerts if a["status"] == "firing")
        name = payload["groupLabels"].get("alertname", "alert")
        service = payload["groupLabels"].get("service", "")
        subject = (
            f"[FIRING:{firing}] {name} ({service})" if firing else f"[RESOLVED] {name} ({service})"
        )
        lines = [subject, ""]
        for a in alerts:
            lines.append(f"- {a['status'].upper()}: {a['annotations'].get('summary', '')}")
            if a["annotations"].get("description"):
                lines.append(f"  {a['annotations']['description']}")
            lines.append(f"  since {a['startsAt']}  {a['generatorURL']}")
        lines += ["", f"Dossier: {payload['dossierURL']}", f"Alerts: {payload['externalURL']}"]
        send_mail(
            subject,
            "\n".join(lines),
            settings.DEFAULT_FROM_EMAIL,
            receiver.email_list,
            fail_silently=False,
        )
