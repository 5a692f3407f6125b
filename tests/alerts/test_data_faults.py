"""What the alert pages say agrees with the alert: the list's filters, an ended alert's value,
and a title that says which side of the threshold its value is on."""

import pytest
from django.urls import reverse

from alerts.models import AlertEvent, AlertInstance, Rule
from tests.factories.alerts import T0
from tests.factories.catalog import make_service

pytestmark = pytest.mark.django_db

FIRE = [3000] * 4  # above the 2,000 ms threshold long enough (for 180 s) to fire


@pytest.fixture
def fired(timeline, p99_rule):
    timeline.run(FIRE)
    return p99_rule.instances.get()


@pytest.fixture
def other_alert(team):
    """A pending alert of another service."""
    other = make_service(team, "embed-1b")
    rule = Rule.objects.create(service=other, name="KV cache near full", kind="kv_cache",
                               threshold=0.9)  # fmt: skip
    return AlertInstance.objects.create(
        rule=rule, service=other, fingerprint="other", state="pending", threshold=0.9,
        last_evaluated_at=T0,
    )  # fmt: skip


def names(response) -> list[str]:
    return [a.service.slug for a in response.context["alerts"]]


def test_the_list_keeps_the_one_service_the_fleet_link_asks_for(owner_client, fired, other_alert):
    response = owner_client.get(reverse("alerts:alert_list") + "?service=embed-1b")
    assert names(response) == ["embed-1b"]


def test_the_list_keeps_the_one_state_asked_for(owner_client, fired, other_alert):
    response = owner_client.get(reverse("alerts:alert_list") + "?state=pending")
    assert [a.state for a in response.context["alerts"]] == ["pending"]


def test_an_unknown_service_filter_is_a_404_naming_it(owner_client, fired):
    response = owner_client.get(reverse("alerts:alert_list") + "?service=nope")
    assert response.status_code == 404
    assert "service: no service &#x27;nope&#x27;" in response.content.decode()


def test_an_unknown_state_filter_is_a_400_naming_the_field(owner_client, fired):
    response = owner_client.get(reverse("alerts:alert_list") + "?state=burning")
    assert response.status_code == 400
    assert "state: &#x27;burning&#x27; is not one of" in response.content.decode()


def test_a_resolved_alert_does_not_call_its_value_live(owner_client, timeline, p99_rule):
    timeline.run([*FIRE, 1000, 1000])
    alert = p99_rule.instances.get()
    assert alert.state == "resolved"
    html = owner_client.get(alert.get_absolute_url()).content.decode()
    value = html[html.index("<dt>Value</dt>") :]
    value = value[: value.index("</dd>")]
    assert "1,000 ms" in value and "when it ended" in value and "live," not in value


def test_an_alert_without_a_series_charts_its_history_values(owner_client, fired):
    AlertInstance.objects.filter(pk=fired.pk).update(series=[])
    html = owner_client.get(fired.get_absolute_url()).content.decode()
    assert "No value recorded yet" not in html
    assert f'data-figure-json="alert-chart-data-{fired.pk}"' in html


def test_a_title_says_a_value_under_the_threshold_is_under_it(timeline, p99_rule):
    # Still firing at 1,900 ms: under the 2,000 ms threshold, above the 1,800 ms resolve line.
    timeline.run([*FIRE, 1900])
    alert = p99_rule.instances.get()
    assert alert.state == "firing"
    assert alert.annotations["summary"].endswith("(1,900 ms, under 2,000 ms)")


def test_a_title_says_a_breaching_value_is_above_the_threshold(fired):
    assert fired.annotations["summary"].endswith("(3,000 ms, above 2,000 ms)")


def test_history_records_a_pending_alert_that_went_inactive(timeline, p99_rule):
    timeline.run([3000, 1000])
    events = AlertEvent.objects.filter(rule=p99_rule).order_by("at", "id")
    kinds = list(events.values_list("kind", flat=True))
    assert kinds[-2:] == ["pending", "inactive"]


def test_the_dossier_timeline_shows_a_pending_alert_ending(owner_client, timeline, p99_rule):
    timeline.run([3000, 1000])
    url = reverse("dashboards:service_timeline", args=[p99_rule.service.slug])
    html = owner_client.get(url).content.decode()
    assert "P99 e2e above SLO: pending cancelled" in html
