"""Alert pages: rendering, permissions (owner, outsider, anonymous), query budgets."""

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from alerts.models import Notification, Receiver, Rule, Silence
from tests.factories.alerts import T0

pytestmark = pytest.mark.django_db

FIRE = [3000] * 4


@pytest.fixture
def fired(timeline, p99_rule):
    timeline.run(FIRE)
    return p99_rule.instances.get()


def test_anonymous_visitors_are_sent_to_login(client):
    response = client.get(reverse("alerts:alert_list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_the_list_shows_firing_alerts_first(owner_client, fired, service):
    Rule.objects.create(service=service, name="Other", kind="kv_cache", threshold=0.9)
    response = owner_client.get(reverse("alerts:alert_list"))
    assert response.status_code == 200
    assert response.context["alerts"][0].state == "firing"
    assert b"P99 e2e above SLO" in response.content


def test_the_detail_page_draws_the_value_against_the_threshold(owner_client, fired):
    response = owner_client.get(reverse("alerts:alert_detail", args=[fired.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "plotly/plotly.min.js" in html
    assert f'data-figure-json="alert-chart-data-{fired.pk}"' in html
    assert '"name": "threshold"' in html
    assert '"name": "resolve threshold"' in html
    assert "for 3 min" in html  # the firing event's reason, from the history


def test_the_list_query_count_does_not_grow_with_alerts(owner_client, timeline, service, p99_rule):
    timeline.run(FIRE)

    def queries():
        with CaptureQueriesContext(connection) as ctx:
            owner_client.get(reverse("alerts:alert_list"))
        return len(ctx.captured_queries)

    one = queries()
    for k in range(5):
        Rule.objects.create(service=service, name=f"P99 copy {k}", kind="p99_e2e",
                            threshold=2000, window_s=60, for_s=0)  # fmt: skip
    timeline.tick(4, e2e_ms=3000)
    assert service.alert_instances.filter(state="firing").count() == 6
    assert queries() == one


def test_owners_edit_rules(owner_client, p99_rule):
    url = reverse("alerts:rule_edit", args=[p99_rule.pk])
    assert owner_client.get(url).status_code == 200
    data = {
        "name": p99_rule.name, "kind": "p99_e2e", "threshold": "2500", "resolve_threshold": "2200",
        "window_s": "300", "for_s": "300", "keep_firing_for_s": "0", "min_requests": "100",
        "severity": "critical", "labels": '{"runbook": "latency"}', "enabled": "on",
    }  # fmt: skip
    response = owner_client.post(url, data)
    assert response.status_code == 302
    p99_rule.refresh_from_db()
    assert (p99_rule.threshold, p99_rule.labels) == (2500, {"runbook": "latency"})


def test_a_resolve_threshold_above_an_above_threshold_is_refused(owner_client, p99_rule):
    data = {
        "name": p99_rule.name, "kind": "p99_e2e", "threshold": "2000", "resolve_threshold": "2500",
        "window_s": "300", "for_s": "300", "keep_firing_for_s": "0", "min_requests": "100",
        "severity": "critical", "labels": "{}",
    }  # fmt: skip
    response = owner_client.post(reverse("alerts:rule_edit", args=[p99_rule.pk]), data)
    assert response.status_code == 200
    assert "resolve_threshold" in response.context["form"].errors


def test_outsiders_cannot_edit_rules(outsider_client, p99_rule):
    url = reverse("alerts:rule_edit", args=[p99_rule.pk])
    assert outsider_client.get(url).status_code == 403
    assert outsider_client.post(url, {"threshold": "1"}).status_code == 403


def test_outsiders_cannot_create_rules(outsider_client, service):
    assert (
        outsider_client.get(reverse("alerts:rule_create", args=[service.slug])).status_code == 403
    )


def test_anonymous_cannot_edit_rules(client, p99_rule):
    response = client.get(reverse("alerts:rule_edit", args=[p99_rule.pk]))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_owners_create_a_rule(owner_client, service):
    data = {
        "name": "KV cache", "kind": "kv_cache", "threshold": "0.9", "resolve_threshold": "0.85",
        "window_s": "300", "for_s": "300", "keep_firing_for_s": "0", "min_requests": "0",
        "severity": "warning", "labels": "{}", "enabled": "on",
    }  # fmt: skip
    response = owner_client.post(reverse("alerts:rule_create", args=[service.slug]), data)
    assert response.status_code == 302
    assert Rule.objects.get(name="KV cache").service == service


def test_the_rule_list_links_edits_only_for_editable_services(outsider_client, p99_rule):
    response = outsider_client.get(reverse("alerts:rule_list"))
    assert response.status_code == 200
    assert reverse("alerts:rule_edit", args=[p99_rule.pk]).encode() not in response.content


def test_owners_create_and_expire_silences(owner_client, team):
    response = owner_client.post(
        reverse("alerts:silence_list"),
        {
            "team": team.pk,
            "matchers": 'service="chat-7b", alertname=~"P99.*"',
            "duration_h": "2",
            "comment": "load test",
        },
    )
    assert response.status_code == 302
    silence = Silence.objects.get()
    assert silence.matchers[1] == {"name": "alertname", "op": "=~", "value": "P99.*"}
    owner_client.post(reverse("alerts:silence_expire", args=[silence.pk]))
    silence.refresh_from_db()
    assert silence.ends_at <= timezone.now()


def test_a_bad_matcher_is_refused_with_its_position(owner_client, team):
    response = owner_client.post(
        reverse("alerts:silence_list"),
        {"team": team.pk, "matchers": "service=chat", "duration_h": "1", "comment": "x"},
    )
    assert response.status_code == 200
    assert "matcher 1" in response.context["form"].errors["matchers"][0]


def test_outsiders_cannot_silence_a_team(outsider_client, team):
    response = outsider_client.post(
        reverse("alerts:silence_list"),
        {"team": team.pk, "matchers": 'service="x"', "duration_h": "1", "comment": "x"},
    )
    assert response.status_code == 403
    assert not Silence.objects.exists()


def test_outsiders_cannot_expire_a_teams_silence(outsider_client, team):
    silence = Silence.objects.create(
        team=team, matchers=[{"name": "service", "op": "=", "value": "x"}],
        starts_at=T0, ends_at=timezone.now() + timedelta(hours=1), comment="x",
    )  # fmt: skip
    response = outsider_client.post(reverse("alerts:silence_expire", args=[silence.pk]))
    assert response.status_code == 403


def test_the_receivers_page_shows_a_failing_webhook(owner_client, timeline, p99_rule, webhook,
                                                    webhook_server):  # fmt: skip
    webhook_server.statuses[:] = [500] * 20
    timeline.run(FIRE)
    response = owner_client.get(reverse("alerts:receiver_list"))
    assert Notification.objects.get().status == "failed"
    assert b"answered 500" in response.content
    assert b"failed" in response.content


def test_owners_add_a_receiver(owner_client, team):
    response = owner_client.post(
        reverse("alerts:receiver_create"),
        {"team": team.pk, "name": "hook", "kind": "webhook", "url": "https://hooks.example.com/x",
         "emails": "", "send_resolved": "on", "repeat_interval_s": "3600", "enabled": "on"},
    )  # fmt: skip
    assert response.status_code == 302
    assert Receiver.objects.get().url == "https://hooks.example.com/x"


def test_the_service_fragment_lists_open_alerts_and_history(owner_client, fired, service):
    response = owner_client.get(reverse("alerts:service_fragment", args=[service.slug]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "<html" not in html
    assert fired.get_absolute_url() in html
    assert "firing" in html


def test_the_rule_list_writes_windows_in_days_and_minutes(owner_client, service):
    Rule.objects.create(service=service, name="Slow burn", kind="p99_e2e", threshold=2000,
                        window_s=259200, for_s=900)  # fmt: skip

    html = owner_client.get(reverse("alerts:rule_list")).content.decode()

    assert "3 d / 15 min" in html
    assert "259200 s" not in html


def test_the_rule_list_says_health_is_the_rules_evaluation_not_its_alert(owner_client, p99_rule):
    html = owner_client.get(reverse("alerts:rule_list")).content.decode()

    assert "Rule health" in html
    assert "not whether its alert fires" in html


def test_the_rule_list_names_a_ratio_kind_in_the_percent_its_threshold_shows(owner_client, service):
    # "Error rate above (0-1)" beside "5.0%" read as two different units.
    Rule.objects.create(service=service, name="Errors", kind="error_rate", threshold=0.05)
    html = owner_client.get(reverse("alerts:rule_list")).content.decode()
    row = re.search(r"Errors</span>.*?</tr>", html, re.S).group(0)
    assert "Error rate above (ratio, 0.05 = 5%)" in row and ">5.0%<" in row, row


def test_the_rule_form_says_a_ratio_threshold_is_a_fraction(owner_client, service):
    html = owner_client.get(reverse("alerts:rule_create", args=[service.slug])).content.decode()
    assert "a ratio as a fraction (0.05 = 5%)" in html
