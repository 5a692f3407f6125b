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


@pytest.fixture
def outage_rule(service, latency_slo) -> Rule:
    """The default outage pair's rule: 20x over 10 min and its 1-minute short window."""
    from alerts.services import ensure_default_rules

    ensure_default_rules(service)
    return Rule.objects.get(service=service, kind="slo_burn", window_s=600)


def test_the_outage_pair_reads_both_windows_when_every_minute_is_rolled_up(timeline, outage_rule):
    # Its 1-minute short window is the minute that closed the lag (2 min) before now: rolled
    # up by then, it has data (the pair's "no data" in the demo is not the pipeline's).
    timeline.run([GOOD] * 12)
    outage_rule.refresh_from_db()
    assert outage_rule.health == "ok", outage_rule.health_reason
    assert "over 10 min, 0.0x over 1 min" in outage_rule.health_reason


def test_the_outage_pair_pages_within_minutes_of_a_total_outage(timeline, outage_rule):
    timeline.run([GOOD] * 12)
    timeline.run([BAD] * 2, start=12)  # 20x at 99.9% is 2% bad: both windows at once
    assert states(outage_rule) == ["firing"]
    # At the first evaluation whose windows hold the bad minute: 2 min after it closed.
    paged = AlertEvent.objects.get(rule=outage_rule, kind="firing").at
    assert paged == minute(13) + timedelta(minutes=2)


def test_traffic_that_stopped_says_its_short_window_is_empty_not_that_it_has_none(
    timeline, outage_rule
):
    # Data up to minute 11, none in minute 12 (the short window of this evaluation): a demo
    # whose live traffic has not caught up with its seeded history reads so.
    timeline.run([GOOD] * 12)
    timeline.tick(12)
    outage_rule.refresh_from_db()
    assert outage_rule.health == "no_data"
    reason = outage_rule.health_reason
    assert "no requests in the short window (the last 1 min to 09:13 UTC" in reason
    assert "though 1,080 in 10 min" in reason  # minutes 3 to 11, 120 requests each
    assert "traffic stopped, or its latest minutes are not rolled up yet" in reason
