"""Notifications: the Alertmanager body on a real loopback receiver, dedup, repeat, silences,
resolved notices, retries and email."""

from datetime import timedelta

import pytest
from django.core import mail

from alerts import notifications, services
from alerts.models import Notification, Receiver, Rule
from tests.factories.alerts import T0, minute

pytestmark = pytest.mark.django_db

DOSSIER = "/services/chat-7b/"  # the service's get_absolute_url
FIRE = [3000] * 4  # pending at 0, firing at 3 (for = 180 s)


def test_a_webhook_on_loopback_gets_the_alertmanager_body(
    timeline, p99_rule, webhook, webhook_server
):
    timeline.run(FIRE)
    assert len(webhook_server.bodies) == 1
    body = webhook_server.bodies[0]
    assert body["version"] == "4"
    assert body["status"] == "firing"
    assert body["receiver"] == "oncall-webhook"
    assert body["groupLabels"] == {"alertname": "P99 e2e above SLO", "service": "chat-7b"}
    assert body["groupKey"] == '{}:{alertname="P99 e2e above SLO", service="chat-7b"}'
    assert body["commonLabels"]["severity"] == "warning"
    assert body["externalURL"] == "https://perfhub.example.com/alerts/"
    assert body["dossierURL"] == "https://perfhub.example.com" + DOSSIER
    [alert] = body["alerts"]
    assert alert["status"] == "firing"
    assert alert["labels"]["alertname"] == "P99 e2e above SLO"
    assert alert["labels"]["service"] == "chat-7b"
    assert alert["annotations"]["dossier_url"] == "https://perfhub.example.com" + DOSSIER
    assert alert["annotations"]["summary"].startswith("Chat 7B: P99 e2e above SLO (")
    assert "above 2,000 ms" in alert["annotations"]["summary"]
    assert alert["startsAt"] == (minute(3) + timedelta(minutes=3)).isoformat().replace(
        "+00:00", "Z"
    )
    assert alert["endsAt"] == "0001-01-01T00:00:00Z"
    assert alert["generatorURL"].startswith("https://perfhub.example.com/alerts/")
    assert len(alert["fingerprint"]) == 16


def test_it_fires_once_and_resolves_once(timeline, p99_rule, webhook, webhook_server):
    timeline.run(FIRE + [3000] * 5 + [1000] * 3)
    assert [b["status"] for b in webhook_server.bodies] == ["firing", "resolved"]
    resolved = webhook_server.bodies[1]["alerts"][0]
    assert resolved["status"] == "resolved"
    assert resolved["endsAt"] != "0001-01-01T00:00:00Z"


def test_it_repeats_on_the_interval_while_firing(timeline, p99_rule, webhook, webhook_server):
    Receiver.objects.filter(pk=webhook.pk).update(repeat_interval_s=300)
    timeline.run(FIRE + [3000] * 5)  # fires at minute 3; repeat due at minute 8
    assert [b["status"] for b in webhook_server.bodies] == ["firing", "firing"]


def test_a_doubled_evaluation_sends_nothing_twice(timeline, p99_rule, webhook, webhook_server):
    timeline.run(FIRE)
    timeline.tick(3)
    timeline.tick(3)
    assert len(webhook_server.bodies) == 1
    assert Notification.objects.count() == 1


def test_a_notification_is_sent_by_one_worker_only(timeline, p99_rule, webhook, webhook_server):
    timeline.run(FIRE)
    notification = Notification.objects.get()
    Notification.objects.filter(pk=notification.pk).update(status=Notification.Status.QUEUED)
    assert notifications.claim(notification.pk, T0) is not None
    assert notifications.deliver(notification.pk) == "skipped"  # claimed: status is sending


def test_a_silenced_alert_sends_nothing(timeline, p99_rule, webhook, webhook_server, team):
    services.silence_create(
        team=team,
        matchers=[
            {"name": "service", "op": "=", "value": "chat-7b"},
            {"name": "alertname", "op": "=~", "value": "P99.*"},
        ],
        starts_at=T0,
        ends_at=T0 + timedelta(hours=2),
        comment="load test in progress",
    )
    timeline.run(FIRE + [3000] * 3 + [1000] * 2)
    assert webhook_server.bodies == []
    assert not Notification.objects.exists()


def test_a_silence_that_does_not_match_lets_it_through(
    timeline, p99_rule, webhook, webhook_server, team
):
    services.silence_create(
        team=team,
        matchers=[{"name": "service", "op": "!=", "value": "chat-7b"}],
        starts_at=T0,
        ends_at=T0 + timedelta(hours=2),
        comment="other services",
    )
    timeline.run(FIRE)
    assert len(webhook_server.bodies) == 1


def test_resolved_goes_only_to_receivers_that_saw_the_firing(
    timeline, p99_rule, webhook, webhook_server, team
):
    timeline.run(FIRE)
    late = Receiver.objects.create(team=team, name="late", kind="webhook", url=webhook.url)
    timeline.tick(4, e2e_ms=1000)
    assert [b["receiver"] for b in webhook_server.bodies] == ["oncall-webhook", "oncall-webhook"]
    assert webhook_server.bodies[1]["status"] == "resolved"
    assert not Notification.objects.filter(receiver=late).exists()


def test_a_receiver_added_while_firing_is_told_and_then_resolved(
    timeline, p99_rule, webhook, webhook_server, team
):
    timeline.run(FIRE)
    Receiver.objects.create(team=team, name="late", kind="webhook", url=webhook.url)
    timeline.run([3000, 1000], start=4)
    seen = [(b["receiver"], b["status"]) for b in webhook_server.bodies]
    assert seen[0] == ("oncall-webhook", "firing")
    assert sorted(seen[1:]) == [
        ("late", "firing"),
        ("late", "resolved"),
        ("oncall-webhook", "resolved"),
    ]


def test_a_failing_webhook_is_retried_until_it_succeeds(
    timeline, p99_rule, webhook, webhook_server
):
    webhook_server.statuses[:] = [500, 503]
    timeline.run(FIRE)
    notification = Notification.objects.get()
    assert notification.status == Notification.Status.SENT
    assert notification.attempts == 3
    assert len(webhook_server.bodies) == 3


def test_a_webhook_that_keeps_failing_records_its_error(
    timeline, p99_rule, webhook, webhook_server
):
    webhook_server.statuses[:] = [500] * 20
    timeline.run(FIRE)
    notification = Notification.objects.get()
    assert notification.status == Notification.Status.FAILED
    assert notification.attempts == 7  # the first try and six retries
    assert "answered 500" in notification.last_error


def test_an_email_receiver_gets_a_readable_message(timeline, p99_rule, team):
    Receiver.objects.create(team=team, name="ops-mail", kind="email", emails="ops@example.com")
    timeline.run(FIRE)
    [message] = mail.outbox
    assert message.subject == "[FIRING:1] P99 e2e above SLO (chat-7b)"
    assert message.to == ["ops@example.com"]
    assert "https://perfhub.example.com" + DOSSIER in message.body


def test_a_disabled_rule_sends_nothing(timeline, p99_rule, webhook, webhook_server):
    Rule.objects.filter(pk=p99_rule.pk).update(enabled=False)
    timeline.run(FIRE)
    assert webhook_server.bodies == []


def test_a_notification_left_sending_by_a_dead_worker_is_sent_again(
    timeline, p99_rule, webhook, webhook_server
):
    timeline.run(FIRE)
    Notification.objects.update(status=Notification.Status.SENDING, claimed_at=T0)
    requeued = notifications.requeue_stuck(now=T0 + timedelta(minutes=11))
    assert requeued == [Notification.objects.get().pk]
    assert Notification.objects.get().status == Notification.Status.SENT
    assert len(webhook_server.bodies) == 2


def test_a_notification_being_sent_now_is_left_alone(timeline, p99_rule, webhook, webhook_server):
    timeline.run(FIRE)
    Notification.objects.update(status=Notification.Status.SENDING, claimed_at=T0)
    assert notifications.requeue_stuck(now=T0 + timedelta(minutes=5)) == []


def test_a_queued_notification_whose_message_was_lost_is_sent_once_after_the_stuck_delay(
    timeline, p99_rule, webhook, webhook_server, settings
):
    settings.PERFHUB_NOTIFICATIONS_STUCK_AFTER_S = 15
    timeline.run(FIRE)
    sent = len(webhook_server.bodies)
    # The broker restarted before a worker took the message: the row waits, queued.
    Notification.objects.update(status=Notification.Status.QUEUED, claimed_at=None, created_at=T0)
    assert notifications.requeue_stuck(now=T0 + timedelta(seconds=10)) == []
    assert notifications.requeue_stuck(now=T0 + timedelta(seconds=16)) != []
    assert Notification.objects.get().status == Notification.Status.SENT
    assert len(webhook_server.bodies) == sent + 1
