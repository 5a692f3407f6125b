"""Evaluation over real roll-up rows: lifecycle, hysteresis, health, idempotency, queries."""

from datetime import timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext

from alerts import services, sources
from alerts.models import AlertInstance, Rule
from collectors.models import PrometheusSource
from collectors.services.prometheus import source_create
from tests.factories.alerts import evaluation_time, feed

pytestmark = pytest.mark.django_db


def kinds(rule):
    return list(rule.events.order_by("at", "id").values_list("kind", flat=True))


def test_a_breach_shorter_than_for_never_fires(timeline, p99_rule):
    timeline.run([1000, 3000, 3000, 1000, 1000])
    assert kinds(p99_rule) == ["pending", "inactive"]
    assert not AlertInstance.objects.filter(state="firing").exists()


def test_a_lasting_breach_fires_once_and_resolves_once(timeline, p99_rule):
    timeline.run([1000] + [3000] * 6 + [1000] * 3)
    assert kinds(p99_rule) == ["pending", "firing", "resolved"]
    instance = AlertInstance.objects.get()
    assert instance.state == "resolved"
    assert instance.fired_at - instance.pending_since == timedelta(seconds=180)


def test_the_history_records_value_threshold_and_reason(timeline, p99_rule):
    timeline.run([3000] * 4)
    firing = p99_rule.events.get(kind="firing")
    assert firing.value == pytest.approx(3000, rel=0.02)
    assert firing.threshold == 2000
    assert firing.count == 120
    assert "for 3 min" in firing.reason


def test_a_value_hovering_at_the_threshold_does_not_flap(timeline, p99_rule):
    timeline.run([2100] * 4 + [1950, 2050, 1950, 2050, 1950, 2050])
    assert kinds(p99_rule) == ["pending", "firing"]
    assert AlertInstance.objects.get().state == "firing"


def test_without_hysteresis_the_same_series_would_flap(timeline, p99_rule):
    Rule.objects.filter(pk=p99_rule.pk).update(resolve_threshold=None, for_s=0)
    timeline.run([2100, 1950, 2050, 1950])
    assert kinds(p99_rule) == ["firing", "resolved", "firing", "resolved"]


def test_keep_firing_for_holds_the_alert(timeline, p99_rule):
    Rule.objects.filter(pk=p99_rule.pk).update(for_s=0, keep_firing_for_s=150)
    timeline.run([3000, 1000, 1000])
    assert AlertInstance.objects.get().state == "firing"
    timeline.tick(3, e2e_ms=1000)
    assert kinds(p99_rule) == ["firing", "resolved"]


def test_one_live_instance_per_fingerprint(timeline, p99_rule):
    timeline.run([3000] * 4)
    live = AlertInstance.objects.get(state="firing")
    with pytest.raises(IntegrityError), transaction.atomic():
        AlertInstance.objects.create(
            rule=p99_rule,
            service=live.service,
            fingerprint=live.fingerprint,
            state="pending",
            threshold=1,
            last_evaluated_at=live.last_evaluated_at,
        )


def test_a_second_evaluation_of_the_same_minute_does_nothing(timeline, p99_rule):
    first = timeline.tick(0, e2e_ms=3000)
    second = timeline.tick(0)
    assert (first.rules, second.rules) == (1, 0)
    assert kinds(p99_rule) == ["pending"]


def test_evaluation_times_align_to_the_minute(timeline, p99_rule):
    feed(timeline.service, timeline.host, 0, e2e_ms=3000)
    at = evaluation_time(0)
    assert services.evaluate_all(at + timedelta(seconds=1)).rules == 1
    assert services.evaluate_all(at + timedelta(seconds=59)).rules == 0
    assert Rule.objects.get().last_evaluated_at == at


def test_it_reads_only_closed_windows(timeline, p99_rule):
    Rule.objects.filter(pk=p99_rule.pk).update(for_s=0)
    feed(timeline.service, timeline.host, 0, e2e_ms=1000)
    feed(timeline.service, timeline.host, 1, e2e_ms=9000)  # inside the lag: not yet read
    services.evaluate_all(evaluation_time(0))
    assert not AlertInstance.objects.exists()


def test_no_data_is_a_health_state_recorded_once(timeline, p99_rule):
    timeline.tick(0)
    timeline.tick(1)
    p99_rule.refresh_from_db()
    assert p99_rule.health == "no_data"
    assert kinds(p99_rule) == ["no_data"]


def test_too_few_requests_is_insufficient_data(timeline, p99_rule):
    timeline.tick(0, e2e_ms=3000, requests=40)
    p99_rule.refresh_from_db()
    assert p99_rule.health == "insufficient_data"
    assert "40 requests" in p99_rule.health_reason
    assert not AlertInstance.objects.exists()


def test_health_recovers_with_an_ok_event(timeline, p99_rule):
    timeline.tick(0)
    timeline.tick(1, e2e_ms=1000)
    assert kinds(p99_rule) == ["no_data", "ok"]


def test_a_firing_alert_keeps_firing_through_missing_data(timeline, p99_rule):
    Rule.objects.filter(pk=p99_rule.pk).update(for_s=0)
    timeline.tick(0, e2e_ms=3000)
    timeline.tick(1)
    assert AlertInstance.objects.get().state == "firing"


def test_the_history_selector_returns_a_services_events(timeline, p99_rule, service):
    from alerts.selectors import alert_history_for_service

    timeline.run([3000] * 4 + [1000])
    events = alert_history_for_service(service, evaluation_time(0), evaluation_time(10))
    assert [e.kind for e in events] == ["pending", "firing", "resolved"]


def test_evaluation_queries_do_not_grow_with_services(team, host, make_services):
    from dossiers.models import Service

    def count_queries(n, minute):
        make_services(n)
        for s in Service.objects.all():
            for m in (minute, minute + 1):
                feed(s, host, m, e2e_ms=1000, gpu={"util": 0.9, "sm_active": 0.5},
                     gauges={"requests_waiting": 0, "kv_cache_usage": 0.5})  # fmt: skip
        # The first run creates the default rules; the second, measured, is the steady state.
        services.evaluate_all(evaluation_time(minute))
        with CaptureQueriesContext(connection) as ctx:
            services.evaluate_all(evaluation_time(minute + 1))
        return len(ctx.captured_queries)

    few = count_queries(2, 0)
    many = count_queries(10, 2)
    assert Rule.objects.count() == 12 * 13  # every default rule of 12 services
    # <= 26: each batched read runs in a savepoint (two statements), so one that fails only
    # marks the rules needing it (issue 10, no poison). SLO burn rules add five: their savepoint,
    # the SLO rows, and one read of distributions and of request counts for all their windows.
    assert many == few <= 33


def test_a_rule_that_cannot_be_evaluated_does_not_stop_the_others(timeline, p99_rule):
    # An unprocessable row written straight into the database: labels that are not a mapping.
    broken = Rule.objects.create(
        service=p99_rule.service, name="broken", kind="p99_e2e", threshold=2000,
        window_s=60, for_s=0, min_requests=100, labels=["not a mapping"],
    )  # fmt: skip
    timeline.run([3000] * 4)
    assert kinds(p99_rule) == ["pending", "firing"]
    broken.refresh_from_db()
    assert broken.health == "error"
    assert "evaluation failed" in broken.health_reason


def test_a_failing_gpu_read_marks_only_the_rules_that_read_gpus(monkeypatch, service, host):
    services.ensure_default_rules(service)
    for i in range(15):
        feed(service, host, i, e2e_ms=1000, gpu={"util": 0.9, "sm_active": 0.5})

    def unreadable(*args, **kwargs):
        raise RuntimeError("GPU rows unreadable")

    monkeypatch.setattr(sources, "add_gpu", unreadable)
    services.evaluate_all(evaluation_time(14))
    health = {r.kind: (r.health, r.health_reason) for r in Rule.objects.filter(service=service)}
    reason = "could not read its data: RuntimeError: GPU rows unreadable"
    assert health["gpu_waiting"] == ("error", reason)
    assert health["sm_gap"] == ("error", reason)
    # The P99 rules read the same 5-minute window, without its GPU rows.
    assert health["p99_e2e"][0] == "ok"


def test_a_failing_prometheus_source_is_the_rules_health_reason(timeline, p99_rule, service):
    source = source_create(name="prom", service=service, base_url="http://prometheus:9090",
                           engine_selector='job="vllm"')  # fmt: skip
    PrometheusSource.objects.filter(pk=source.pk).update(
        status="error", last_error="unreachable: ConnectionError: refused"
    )
    timeline.tick(0)  # no data in the window
    p99_rule.refresh_from_db()
    assert p99_rule.health == "error"
    assert p99_rule.health_reason == (
        "Prometheus source 'prom' failing: unreachable: ConnectionError: refused"
    )


def test_evaluation_in_chunks_evaluates_every_rule_once(settings, team, host, make_services):
    # Chunks smaller than one service's nine rules: a service's rules span two chunks.
    settings.PERFHUB_ALERTS_EVALUATION_CHUNK = 4
    for service in make_services(3):
        services.ensure_default_rules(service)
        feed(service, host, 0, e2e_ms=9000)
    at = evaluation_time(0)
    assert services.evaluate_all(at).rules == 39
    assert services.evaluate_all(at).rules == 0
    assert set(Rule.objects.values_list("last_evaluated_at", flat=True)) == {at}
    # e2e, TTFT and TPOT above their SLOs and the margin below target (the fed tokens earn
    # less than the GPUs cost), on every service: pending once each.
    pending = AlertInstance.objects.filter(state="pending")
    assert sorted(pending.values_list("labels__rule_kind", flat=True)) == sorted(
        ["p99_e2e", "p99_ttft", "p99_tpot", "margin"] * 3
    )
