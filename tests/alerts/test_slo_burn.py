"""The SLO burn-rate rule through the real pipeline: raw requests rolled up by collectors,
evaluated minute by minute, alerts through the same lifecycle as every rule."""

from __future__ import annotations

from datetime import timedelta

import pytest

from alerts.models import AlertEvent, AlertInstance, Rule
from dossiers.models import Slo
from tests.factories.alerts import minute

pytestmark = pytest.mark.django_db

GOOD, BAD = 1000.0, 9000.0  # e2e ms against a 2,000 ms objective


@pytest.fixture
def latency_slo(service) -> Slo:
    return Slo.objects.create(
        service=service, name="Interactive", e2e_ms=2000, target_percent=99.9, window_days=28
    )


@pytest.fixture
def fast_rule(service, latency_slo) -> Rule:
    return Rule.objects.create(
        service=service, name="SLO budget burn: fast", kind="slo_burn", threshold=14.4,
        resolve_threshold=14.4, window_s=3600, for_s=0, min_requests=100, severity="critical",
    )  # fmt: skip


def states(rule: Rule) -> list[str]:
    return list(
        AlertEvent.objects.filter(rule=rule, instance__isnull=False)
        .order_by("at", "id")
        .values_list("kind", flat=True)
    )


def test_a_total_outage_pages_at_the_first_evaluation_that_sees_it(timeline, fast_rule):
    timeline.run([GOOD] * 10)
    assert states(fast_rule) == []
    timeline.run([BAD], start=10)  # evaluated 2 min (the lag) after the minute closes
    assert states(fast_rule) == ["firing"]
    alert = AlertInstance.objects.get(rule=fast_rule)
    assert alert.labels["slo"] == str(fast_rule.service.slos.get().pk)
    assert "burn" in alert.annotations["description"]


def test_in_budget_traffic_never_fires(timeline, fast_rule):
    timeline.run([GOOD] * 15)
    assert states(fast_rule) == []
    fast_rule.refresh_from_db()
    assert fast_rule.health == "ok" and fast_rule.last_value == 0.0


def test_the_alert_resolves_once_the_short_window_is_clean(timeline, fast_rule):
    timeline.run([GOOD] * 10 + [BAD] * 3 + [GOOD] * 6)
    # The hour still burns far above 14.4x, but 5 clean minutes end the page.
    assert states(fast_rule) == ["firing", "resolved"]


def test_a_service_without_requests_reports_no_data(timeline, fast_rule):
    timeline.tick(0)
    fast_rule.refresh_from_db()
    assert fast_rule.health == "no_data"


def test_default_rules_follow_the_settings_pairs(service, latency_slo, settings):
    from alerts.services import ensure_default_rules

    settings.PERFHUB_SLO_BURN_PAIRS = [
        {"name": "fast", "factor": 10, "long_s": 1800, "severity": "critical"}
    ]
    ensure_default_rules(service)
    rule = Rule.objects.get(service=service, kind="slo_burn")
    assert (rule.threshold, rule.window_s) == (10.0, 1800)
    assert rule.kind_spec.windows(rule) == (1800, 150)


def test_deleting_a_burning_slo_resolves_its_alert(timeline, fast_rule, latency_slo):
    timeline.run([GOOD] * 10 + [BAD])
    assert states(fast_rule) == ["firing"]
    latency_slo.delete()
    Slo.objects.create(service=fast_rule.service, name="Relaxed", e2e_ms=20_000)
    timeline.run([BAD], start=11)
    assert states(fast_rule) == ["firing", "resolved"]


def test_a_total_outage_at_99_pages_within_5_minutes_with_the_default_rules(timeline, service):
    from alerts.services import ensure_default_rules

    Slo.objects.create(service=service, name="Interactive", e2e_ms=2000, target_percent=99)
    ensure_default_rules(service)
    timeline.run([GOOD] * 15)
    timeline.run([BAD] * 2, start=15)  # the outage starts at minute 15
    paged = AlertEvent.objects.filter(kind="firing", rule__kind="slo_burn").order_by("at")
    assert paged.exists()
    assert paged[0].at - minute(15) <= timedelta(minutes=5)
    assert paged[0].rule.severity == "critical"
