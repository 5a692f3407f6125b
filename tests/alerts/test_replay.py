"""Replaying past observations (the demo's history) writes what evaluation writes for them."""

import pytest

from alerts import notifications, rules
from alerts.models import AlertEvent, AlertInstance, Notification, Receiver
from alerts.services import evaluation_lag, replay
from analysis.alerting import Health, Observation
from tests.factories.alerts import minute

pytestmark = pytest.mark.django_db

INSTANCE = ["state", "value", "threshold", "pending_since", "fired_at", "last_active_at",
            "resolved_at", "ended_at", "last_evaluated_at", "series", "annotations", "labels",
            "fingerprint"]  # fmt: skip
EVENT = ["at", "kind", "value", "count", "threshold", "reason"]


def written(rule):
    instances = list(AlertInstance.objects.filter(rule=rule).order_by("id").values(*INSTANCE))
    events = list(
        AlertEvent.objects.filter(rule=rule, instance__isnull=False)
        .order_by("at", "id")
        .values(*EVENT)
    )
    return instances, events


def test_a_replay_writes_the_alerts_and_history_a_live_evaluation_wrote(
    timeline, p99_rule, monkeypatch
):
    seen = []
    observe = rules.observe

    def recording(rule, inputs):
        observed = observe(rule, inputs)
        seen.extend((inputs.window_end + evaluation_lag(), o) for _, o in observed)
        return observed

    monkeypatch.setattr(rules, "observe", recording)
    # Fires, resolves, then a second breach that only goes pending: two alerts.
    timeline.run([1000] + [3000] * 6 + [1000] * 3 + [3000] * 2)
    live = written(p99_rule)
    assert [i["state"] for i in live[0]] == ["resolved", "pending"]

    AlertInstance.objects.all().delete()
    AlertEvent.objects.all().delete()
    replay(p99_rule, {"service": p99_rule.service.slug}, seen)
    assert written(p99_rule) == live


def test_a_replay_notifies_nobody(p99_rule, webhook_server, monkeypatch):
    Receiver.objects.create(team=p99_rule.service.team, name="hook", kind="webhook",
                            url=webhook_server.url)  # fmt: skip
    planned = []
    monkeypatch.setattr(notifications, "plan", lambda *args: planned.append(args) or [])
    replay(p99_rule, {"service": p99_rule.service.slug},
           [(minute(i), Observation(Health.OK, value=3000)) for i in range(5)])  # fmt: skip
    assert AlertInstance.objects.get().state == "firing"
    assert planned == [] and not Notification.objects.exists()
