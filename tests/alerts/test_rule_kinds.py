"""Each rule kind reads its value from real roll-ups and fires on it."""

from datetime import timedelta

import pytest

from alerts.models import AlertInstance, Rule
from dossiers.models import Baseline
from tests.factories.alerts import T0

pytestmark = pytest.mark.django_db


def make_rule(service, kind, threshold, **extra):
    return Rule.objects.create(
        service=service, name=kind, kind=kind, threshold=threshold, window_s=60, for_s=0, **extra
    )


def firing(rule):
    return AlertInstance.objects.filter(rule=rule, state="firing")


def test_gpu_waiting_fires_when_the_gpu_idles_while_requests_queue(timeline, service):
    rule = make_rule(service, "gpu_waiting", 0.5)
    timeline.tick(0, gpu={"util": 0.2}, gauges={"requests_waiting": 6, "kv_cache_usage": 0.3})
    assert firing(rule).get().value == pytest.approx(0.2)


def test_gpu_waiting_stays_quiet_when_nothing_is_queued(timeline, service):
    rule = make_rule(service, "gpu_waiting", 0.5)
    timeline.tick(0, gpu={"util": 0.2}, gauges={"requests_waiting": 0, "kv_cache_usage": 0.3})
    assert not firing(rule).exists()
    rule.refresh_from_db()
    assert rule.health == "ok"


def test_sm_active_far_below_gpu_util_fires(timeline, service):
    rule = make_rule(service, "sm_gap", 0.4)
    timeline.tick(0, gpu={"util": 0.97, "sm_active": 0.31}, gauges={"requests_waiting": 1})
    assert firing(rule).get().value == pytest.approx(0.31 / 0.97)


def test_sm_gap_without_profiling_metrics_is_no_data(timeline, service):
    rule = make_rule(service, "sm_gap", 0.4)
    timeline.tick(0, gpu={"util": 0.97}, gauges={"requests_waiting": 1})
    rule.refresh_from_db()
    assert rule.health == "no_data"
    assert "SM active" in rule.health_reason


def test_kv_cache_near_full_fires(timeline, service):
    rule = make_rule(service, "kv_cache", 0.95)
    timeline.tick(0, gauges={"requests_waiting": 3, "kv_cache_usage": 0.98})
    assert firing(rule).get().value == pytest.approx(0.98)


def test_cost_above_baseline_fires(timeline, service):
    Baseline.objects.create(
        service=service, label="v1", measured_at=T0, output_tps=2000, is_current=True
    )
    rule = make_rule(service, "cost_vs_baseline", 25.0)
    # 4 GPUs at 10/h; 120 requests x 200 output tokens a minute = 400 tokens/s fleet-wide.
    timeline.tick(0, e2e_ms=1000)
    alert = firing(rule).get()
    live = 10 * 4 * (1e6 / 400) / 3600
    baseline = 10 * 1 * (1e6 / 2000) / 3600
    assert alert.value == pytest.approx((live / baseline - 1) * 100)


def test_margin_below_target_fires(timeline, service):
    rule = make_rule(service, "margin", 0.2)
    timeline.tick(0, e2e_ms=1000)
    live_cost = 10 * 4 * (1e6 / 400) / 3600  # 27.8 per Mtok against a price of 5
    assert firing(rule).get().value == pytest.approx((5 - live_cost) / 5)


def test_margin_without_a_price_is_no_data(timeline, service):
    service.price_per_mtok = None
    service.save(update_fields=["price_per_mtok"])
    rule = make_rule(service, "margin", 0.2)
    timeline.tick(0, e2e_ms=1000)
    rule.refresh_from_db()
    assert rule.health == "no_data"


def test_no_data_fires_per_host_and_resolves_when_data_returns(timeline, service):
    rule = make_rule(service, "no_data", 300.0, resolve_threshold=60.0)
    timeline.tick(0, e2e_ms=1000)
    for i in range(1, 7):
        timeline.tick(i)  # silent for six minutes
    alerts = firing(rule)
    assert sorted(a.labels.get("host", "") for a in alerts) == ["", "gpu-node-01"]
    timeline.tick(7, e2e_ms=1000)
    assert not firing(rule).exists()


def test_a_scraped_histogram_p99_is_read_in_ms(service, host, p99_rule, timeline):
    """Bucket deltas (seconds) from an engine scrape feed the same P99 rule, in ms."""
    from collectors import storage
    from collectors.models import ScrapeWindow
    from collectors.services.ingest import WINDOW_FIELDS, epoch_minute
    from collectors.services.rollups import rollup_host_minutes

    Rule.objects.filter(pk=p99_rule.pk).update(for_s=0)
    histogram = {"edges": [0.5, 1.0, 2.5, 5.0], "counts": [0, 10, 20, 170, 0], "sum": 600.0}
    storage.bulk_insert(
        ScrapeWindow,
        WINDOW_FIELDS,
        [(host.pk, service.pk, "vllm", T0, T0 + timedelta(seconds=30), 30.0,
          {"requests_finished": 200}, {}, {"e2e_seconds": histogram}, {}, False)],
    )  # fmt: skip
    rollup_host_minutes(host_id=host.pk, minutes=[epoch_minute(T0)])
    timeline.tick(0)
    alert = firing(p99_rule).get()
    # Rank 198 of 200 lands in (2.5 s, 5 s], 168 of its 170: 2.5 + 2.5 x 168/170 seconds.
    assert alert.value == pytest.approx((2.5 + 2.5 * 168 / 170) * 1000)
