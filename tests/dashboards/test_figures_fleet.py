"""The fleet dashboard's figures and the selector behind them."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alerts.models import AlertInstance, Rule
from dashboards.figures.common import is_empty
from dashboards.figures.fleet import cost_margin_figure, gpu_hours_figure, p99_vs_slo_figure
from dashboards.selectors import fleet_dashboard
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic

pytestmark = pytest.mark.django_db

END = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
START = END - timedelta(hours=1)


def _fleet():
    return fleet_dashboard(start=START, end=END)


def test_p99_figure_has_one_dot_per_service_and_their_slos(service, team):
    other = make_service(team, "embed-1b", slo_p99_e2e_ms=1200)
    seed_traffic(service=service, start=START, minutes=10, e2e_ms=1000)  # P99 ~1483 <= 2000
    seed_traffic(service=other, host="h2", start=START, minutes=10, e2e_ms=1000)  # > 1200
    fig = p99_vs_slo_figure(_fleet())
    within = next(t for t in fig.data if t.name == "P99 within SLO")
    above = next(t for t in fig.data if t.name == "P99 above SLO")
    slo = next(t for t in fig.data if t.name == "SLO (P99 target)")
    assert list(within.y) == ["Chat 7B"]
    assert list(above.y) == ["Embed 1B"]
    assert dict(zip(slo.y, slo.x, strict=True)) == {"Chat 7B": 2000, "Embed 1B": 1200}


def test_p99_points_carry_the_dossier_url_for_click_through(service):
    seed_traffic(service=service, start=START, minutes=5)
    fig = p99_vs_slo_figure(_fleet())
    assert fig.data[0].customdata[0] == "/services/chat-7b/"


def test_p99_figure_without_latency_says_so(service):
    fig = p99_vs_slo_figure(_fleet())
    assert "No latency from any service in this range" in is_empty(fig)


def test_cost_scatter_puts_each_service_at_its_cost_and_margin(service):
    service.replicas = 1
    service.save()
    seed_traffic(service=service, start=START, minutes=5, tokens_per_second=2000)
    fig = cost_margin_figure(_fleet())
    live = fig.data[0]
    assert live.name == "live token rate"
    assert live.x[0] == pytest.approx(1.389, abs=0.001)
    assert live.y[0] == pytest.approx(72.2, abs=0.1)
    assert live.customdata[0] == "/services/chat-7b/"


def test_cost_scatter_names_the_currency_on_its_cost_axis(service):
    # The axis read "cost per Mtok (allocation basis)": a cost with no unit.
    make_baseline(service)
    fig = cost_margin_figure(_fleet())
    assert fig.layout.xaxis.title.text.startswith(f"{service.currency} per Mtok")


def test_cost_scatter_over_two_currencies_says_each_is_its_own(service, team):
    make_baseline(service)
    make_baseline(make_service(team, "embed-1b", currency="EUR"))
    fig = cost_margin_figure(_fleet())
    assert "in each service's own currency" in fig.layout.xaxis.title.text


def test_cost_scatter_falls_back_to_the_baseline_without_live_data(service):
    make_baseline(service)
    fig = cost_margin_figure(_fleet())
    assert [t.name for t in fig.data] == ["current baseline (no live data)"]


def test_cost_scatter_without_any_rate_says_why(service):
    assert "no cost per Mtok yet" in is_empty(cost_margin_figure(_fleet()))


def test_gpu_hours_are_counted_per_day_and_split_between_services_on_a_host(service, team):
    other = make_service(team, "embed-1b")
    seed_traffic(service=service, host="shared", start=END - timedelta(hours=2), minutes=120)
    seed_traffic(service=other, host="shared", start=END - timedelta(hours=2), minutes=120, gpus=0)
    fleet = _fleet()
    # Two GPUs reported in two hours: 4 GPU-hours, split evenly between the two services.
    assert {(g.service_slug, g.gpu_hours) for g in fleet.gpu_hours} == {
        ("chat-7b", 2.0),
        ("embed-1b", 2.0),
    }
    fig = gpu_hours_figure(fleet)
    assert [t.name for t in fig.data] == ["Chat 7B", "Embed 1B"]
    assert fig.layout.barmode == "stack"


def test_open_alerts_count_firing_and_pending_instances(service):
    rule = Rule.objects.create(service=service, name="P99", kind="p99_e2e", threshold=1)
    for i, state in enumerate(["firing", "firing", "pending", "resolved"]):
        AlertInstance.objects.create(
            rule=rule,
            service=service,
            fingerprint=f"fp{i}",
            state=state,
            threshold=1,
            last_evaluated_at=END,
        )
    row = _fleet().services[0]
    assert (row.firing, row.pending, row.open_alerts) == (2, 1, 3)
