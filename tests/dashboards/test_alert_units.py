"""Alert values read in the rule's unit and rounding, with the live window they rest on."""

from datetime import UTC, datetime

from django.urls import reverse

from alerts.models import AlertInstance, Rule
from analysis.alerting import State


def _margin_alert(service) -> AlertInstance:
    rule = Rule.objects.create(
        service=service, name="Margin below target", kind="margin", threshold=0.2, window_s=3600
    )
    t = datetime(2026, 12, 1, 4, 57, tzinfo=UTC)
    return AlertInstance.objects.create(
        rule=rule,
        service=service,
        fingerprint="f" * 16,
        state=State.PENDING,
        value=-0.48123,
        threshold=0.2,
        pending_since=t,
        last_evaluated_at=t,
    )


def test_the_alert_list_shows_a_margin_as_a_percentage_with_its_window(client, owner, service):
    _margin_alert(service)
    client.force_login(owner)
    page = client.get(reverse("alerts:alert_list")).content.decode()
    assert "-48.1%" in page and "20.0%" in page
    assert "live, last 60 min" in page
    assert "0.4812" not in page
