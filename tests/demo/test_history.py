"""The demo starts with two weeks of history: every range draws, and one regression is told."""

from datetime import UTC, datetime, timedelta

import pytest

from alerts.models import AlertEvent
from dashboards.selectors import service_dashboard
from demo.history import Regression, backfill_service
from tests.factories.catalog import make_baseline, make_service

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.fixture
def svc(team):
    service = make_service(team, "history-svc")
    make_baseline(service, qps=0.5, prompt_tokens_mean=500, output_tokens_mean=200, gpu_util=0.8)
    return service


def fill(svc, **extra):
    return backfill_service(service=svc, baseline=svc.baselines.get(), host_name="demo-gpu-01",
                            days=3, now=NOW, **extra)  # fmt: skip


def test_a_seven_day_range_draws_hourly_points_from_the_history(svc):
    fill(svc)
    d = service_dashboard(service=svc, start=NOW - timedelta(days=7), end=NOW)
    assert len(d.metrics.points) >= 70


def test_the_last_day_has_minute_points(svc):
    fill(svc)
    d = service_dashboard(service=svc, start=NOW - timedelta(hours=1), end=NOW)
    assert len(d.metrics.points) >= 55


def test_the_told_regression_fired_and_resolved(svc):
    start = NOW - timedelta(days=2)
    fill(svc, regression=Regression(start, start + timedelta(hours=4)))
    kinds = list(
        AlertEvent.objects.filter(service=svc).order_by("at").values_list("kind", flat=True)
    )
    assert kinds == ["pending", "firing", "resolved"]


def test_a_service_with_history_is_left_alone(svc):
    fill(svc)
    assert fill(svc) is False
