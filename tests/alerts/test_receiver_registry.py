"""Receiver kinds are a registry: what happens to a kind no module registers any more."""

import pytest

from alerts import notifications
from alerts.models import Notification, Receiver

pytestmark = pytest.mark.django_db

FIRE = [3000] * 4  # the P99 rule: pending at minute 0, firing at 3


@pytest.fixture
def retired(team) -> Receiver:
    return Receiver.objects.create(team=team, name="old", kind="pager", url="http://127.0.0.1/")


def test_a_receiver_of_an_unregistered_kind_does_not_silence_the_others(
    timeline, p99_rule, webhook, webhook_server, retired
):
    timeline.run(FIRE)
    assert len(webhook_server.bodies) == 1
    assert not Notification.objects.filter(receiver=retired).exists()


def test_a_queued_notification_to_an_unregistered_kind_fails_with_the_reason(
    timeline, p99_rule, webhook, webhook_server
):
    timeline.run(FIRE)
    n = Notification.objects.get()
    Notification.objects.filter(pk=n.pk).update(status=Notification.Status.QUEUED)
    Receiver.objects.filter(pk=webhook.pk).update(kind="pager")
    with pytest.raises(notifications.DeliveryError):
        notifications.deliver(n.pk, final_attempt=True)
    n.refresh_from_db()
    assert (n.status, "unknown receiver kind 'pager'" in n.last_error) == ("failed", True)
