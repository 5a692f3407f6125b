"""The demo's history, read: three days backfilled once for the module (20 s a fill), then
every range draws and every period has its rows. Tests that fill with other settings, or
check every row the writers made, are in test_history.py."""

from datetime import UTC, datetime, timedelta

import pytest

from collectors.models import FIVE_MINUTES, HOUR, MINUTE, ServiceMergedRollup, ServiceRollup
from dashboards.selectors import service_dashboard
from demo.history import backfill_service
from dossiers.models import Team
from tests.factories.catalog import make_baseline, make_service
from tests.support import module_rows

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


def fill(service):
    return backfill_service(service=service, baseline=service.baselines.get(),
                            host_name="demo-gpu-01", days=3, now=NOW)  # fmt: skip


@pytest.fixture(scope="module")
def filled_once(django_db_setup, django_db_blocker):
    """In a transaction rolled back after the module, as `demo_fleet` is; the tests only read."""

    def build():
        service = make_service(Team.objects.create(slug="history", name="History"), "history-svc")
        make_baseline(service, qps=0.5, prompt_tokens_mean=500, output_tokens_mean=200,
                      gpu_util=0.8)  # fmt: skip
        fill(service)
        return service

    yield from module_rows(django_db_blocker, build)


@pytest.fixture
def filled(filled_once, db):
    return filled_once


def test_a_seven_day_range_draws_hourly_points_from_the_history(filled):
    d = service_dashboard(service=filled, start=NOW - timedelta(days=7), end=NOW)
    assert len(d.metrics.points) >= 70


def test_the_last_day_has_minute_points(filled):
    d = service_dashboard(service=filled, start=NOW - timedelta(hours=1), end=NOW)
    assert len(d.metrics.points) >= 55


def test_a_service_with_history_is_left_alone(filled):
    assert fill(filled) is False


def test_every_period_of_the_history_has_its_service_merged_row(filled):
    for resolution in (MINUTE, FIVE_MINUTES, HOUR):
        host_rows = ServiceRollup.objects.filter(service=filled, resolution_s=resolution)
        merged = {
            m.start: m.requests
            for m in ServiceMergedRollup.objects.filter(service=filled, resolution_s=resolution)
        }
        assert merged == {r.start: r.requests for r in host_rows}, resolution


def test_the_history_has_inter_token_latency_as_the_engine_reports_it(filled):
    d = service_dashboard(service=filled, start=NOW - timedelta(days=7), end=NOW)
    with_itl = [p for p in d.metrics.points if any(x.value for x in p.latency.get("itl", []))]
    assert len(with_itl) >= 70


def test_the_history_counts_the_per_request_token_histograms_requests_and_tokens(filled):
    rows = list(ServiceRollup.objects.filter(service=filled, resolution_s=HOUR))
    counted = [(r.scraped_token_requests, r.scraped_request_output_tokens) for r in rows]
    assert rows and counted == [(r.scraped_requests, r.scraped_generation_tokens) for r in rows]
