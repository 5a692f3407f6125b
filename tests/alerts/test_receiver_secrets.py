"""Team-only secrets: a receiver's target and delivery errors are read by its team (and staff);
others see no receiver of another team, and a masked target where a notification shows one.
A receiver aimed at an internal address is refused, on save and on delivery."""

import pytest
from django.urls import reverse

from alerts.models import Notification, Receiver

pytestmark = pytest.mark.django_db

FIRE = [3000] * 4
SECRET_URL_PART = "/hook"  # the webhook_server URL's path: what masking must hide


@pytest.fixture
def failing(timeline, p99_rule, webhook, webhook_server):
    """The P99 rule fired and its webhook answered 500 each time: a failed notification."""
    webhook_server.statuses[:] = [500] * 20
    timeline.run(FIRE)
    notification = Notification.objects.get()
    assert notification.status == "failed"
    return notification


@pytest.fixture
def staff(django_user_model):
    return django_user_model.objects.create_user("sam", password="pw-sam-123", is_staff=True)


def test_a_non_member_sees_no_other_teams_receiver(client, outsider, failing, webhook):
    client.force_login(outsider)
    html = client.get(reverse("alerts:receiver_list")).content.decode()
    assert webhook.url not in html
    assert webhook.name not in html
    assert "answered 500" not in html


def test_a_member_sees_the_full_url_and_the_error(client, owner, failing, webhook):
    client.force_login(owner)
    html = client.get(reverse("alerts:receiver_list")).content.decode()
    assert webhook.url in html
    assert "answered 500" in html


def test_staff_see_every_teams_receivers(client, staff, failing, webhook):
    client.force_login(staff)
    html = client.get(reverse("alerts:receiver_list")).content.decode()
    assert webhook.url in html
    assert "answered 500" in html


def test_the_alert_page_masks_the_target_and_hides_the_error_from_non_members(
    client, outsider, failing, webhook
):
    client.force_login(outsider)
    html = client.get(reverse("alerts:alert_detail", args=[failing.rule.instances.get().pk]))
    html = html.content.decode()
    assert webhook.url not in html
    assert "http://127.0.0.1/…" in html
    assert "answered 500" not in html
    assert "shown to the team only" in html


def test_the_alert_page_shows_the_team_its_target_and_error(client, owner, failing, webhook):
    client.force_login(owner)
    html = client.get(reverse("alerts:alert_detail", args=[failing.rule.instances.get().pk]))
    html = html.content.decode()
    assert webhook.url in html
    assert "answered 500" in html


def test_a_non_member_cannot_edit_another_teams_receiver(client, outsider, webhook):
    client.force_login(outsider)
    response = client.get(reverse("alerts:receiver_edit", args=[webhook.pk]))
    assert response.status_code == 403


def test_a_receiver_aimed_at_loopback_is_refused_on_save(client, owner, team):
    client.force_login(owner)
    response = client.post(
        reverse("alerts:receiver_create"),
        {"team": team.pk, "name": "hook", "kind": "webhook", "url": "http://127.0.0.1:9/x",
         "emails": "", "send_resolved": "on", "repeat_interval_s": "3600", "enabled": "on"},
    )  # fmt: skip
    assert response.status_code == 200
    assert "127.0.0.1 is a loopback address" in response.content.decode()
    assert not Receiver.objects.exists()


def test_a_receiver_aimed_at_the_metadata_endpoint_is_refused_on_delivery(team, timeline, p99_rule):
    Receiver.objects.create(
        team=team, name="meta", kind="webhook", url="http://169.254.169.254/latest/meta-data/"
    )
    timeline.run(FIRE)
    notification = Notification.objects.get()
    assert notification.status == "failed"
    assert "169.254.169.254 is a link-local" in notification.last_error
