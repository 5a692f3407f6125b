"""Every number a page shows is formatted as the project formats numbers (thousands separated,
precision that fits): the SLO on the fleet dashboard and the service dashboard's header, and
the reasons the alert state machine writes, which the alert timeline prints."""

from datetime import UTC, datetime, timedelta

import pytest
from django.urls import reverse

from analysis.alerting import Direction, Health, InstanceState, Observation, State, Thresholds, step
from tests.factories.catalog import make_service

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.mark.django_db
def test_the_fleet_dashboard_separates_the_slos_thousands(client, owner, team):
    # The SLO column read "12000 ms" beside a live P99 of "10,283 ms".
    make_service(team, "slow-svc", slo_p99_e2e_ms=12000)
    client.force_login(owner)
    html = client.get(reverse("dashboards:fleet")).content.decode()
    row = html[html.index('data-service="slow-svc"') :]
    row = row[: row.index("</tr>")]
    assert "12,000 ms" in row
    assert "12000" not in row


@pytest.mark.django_db
def test_the_service_dashboard_header_separates_the_slos_thousands(client, owner, team):
    make_service(team, "slow-svc", slo_p99_e2e_ms=2000)
    client.force_login(owner)
    html = client.get(reverse("dashboards:service", args=["slow-svc"])).content.decode()
    assert "SLO P99 end-to-end 2,000 ms" in html


def test_an_alert_reason_writes_value_and_threshold_as_pages_do():
    # The timeline printed "3,520 ms against a threshold of 2,000 ms. value 3520 >
    # threshold 2000; waiting 300s".
    rule = Thresholds(Direction.ABOVE, 2000.0, for_s=300)
    obs = Observation(Health.OK, value=3520.0, count=500)
    reason = step(rule, InstanceState(), obs, NOW, fmt=lambda v: f"{v:,.0f} ms").reason
    assert reason == "value 3,520 ms > threshold 2,000 ms; waiting 5 min"


def test_an_alert_reason_without_a_unit_still_separates_thousands():
    rule = Thresholds(Direction.ABOVE, 2000.0, for_s=300)
    pending = InstanceState(State.PENDING, pending_since=NOW, last_active_at=NOW)
    obs = Observation(Health.OK, value=3520.0, count=500)
    reason = step(rule, pending, obs, NOW + timedelta(seconds=300)).reason
    assert reason == "value 3,520 > threshold 2,000 for 5 min"


def test_a_resolved_alert_says_its_value_is_back_below_the_resolve_threshold():
    rule = Thresholds(Direction.ABOVE, 2000.0, resolve_threshold=1800.0)
    firing = InstanceState(State.FIRING, fired_at=NOW, last_active_at=NOW)
    obs = Observation(Health.OK, value=1600.0, count=500)
    reason = step(rule, firing, obs, NOW + timedelta(minutes=1), fmt=lambda v: f"{v:,.0f} ms")
    assert reason.reason == "value 1,600 ms back below the resolve threshold 1,800 ms"
