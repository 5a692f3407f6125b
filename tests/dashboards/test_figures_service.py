"""The service dashboard's figures, built from seeded roll-ups."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import plotly.graph_objects as go
import pytest

from dashboards.figures import service as figures
from dashboards.figures.common import is_empty
from dashboards.figures.service import service_panels
from dashboards.selectors import service_dashboard
from dossiers.models import ConfigVersion, Experiment
from tests.factories.catalog import make_baseline
from tests.factories.traffic import seed_traffic

pytestmark = pytest.mark.django_db

END = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
START = END - timedelta(hours=1)


def _dashboard(service, **kw):
    return service_dashboard(service=service, start=START, end=END, **kw)


def _figure(build):
    """A figure builder whose dict goes through `go.Figure`, which validates it: the page
    sends it unvalidated, so an invalid property would otherwise only show in a browser."""
    return lambda *args: go.Figure(build(*args))


latency_figure = _figure(figures.latency_figure)
throughput_figure = _figure(figures.throughput_figure)
gpu_busy_figure = _figure(figures.gpu_busy_figure)
memory_figure = _figure(figures.memory_figure)
economics_figure = _figure(figures.economics_figure)


def _trace(fig, name):
    return next(t for t in fig.data if t.name == name)


def test_latency_figure_draws_p50_to_p999_with_one_point_per_minute(service):
    seed_traffic(service=service, start=START, minutes=30)
    fig = latency_figure(_dashboard(service), "e2e")
    names = [t.name for t in fig.data]
    assert names[:4] == ["P50", "P90", "P99", "P999"]
    assert all(len(_trace(fig, n).x) == 30 for n in ("P50", "P90", "P99", "P999"))


def test_latency_figure_says_its_points_are_live_and_client_side(service):
    seed_traffic(service=service, start=START, minutes=5)
    title = latency_figure(_dashboard(service), "e2e").layout.title.text
    assert title.endswith(": live, client-side (pushed request rows)")


def test_latency_p99_is_the_percentile_of_the_merged_requests(service):
    seed_traffic(service=service, start=START, minutes=5, e2e_ms=1000)
    p99 = _trace(latency_figure(_dashboard(service), "e2e"), "P99")
    # 120 requests evenly over [500, 1500) ms: the P99 is ~1483 ms (sketch within 1.1%).
    assert all(y == pytest.approx(1483, rel=0.02) for y in p99.y)


def test_latency_figure_draws_the_slo_as_a_flat_line_at_the_target(service):
    seed_traffic(service=service, start=START, minutes=5)
    slo = next(t for t in latency_figure(_dashboard(service), "ttft").data if "SLO" in t.name)
    assert list(slo.y) == [500, 500]
    assert slo.name == "SLO: P99 ≤ 500 ms"


def test_latency_figure_draws_the_baseline_as_a_band_from_p50_to_p99(service):
    make_baseline(service)
    seed_traffic(service=service, start=START, minutes=5)
    fig = latency_figure(_dashboard(service), "e2e")
    band = next(t for t in fig.data if t.name and t.name.startswith("Baseline"))
    lower = fig.data[list(fig.data).index(band) - 1]
    assert band.fill == "tonexty"
    assert list(band.y) == [1500.0, 1500.0]
    assert list(lower.y) == [800.0, 800.0]


def test_hover_text_names_the_request_count_each_point_rests_on(service):
    seed_traffic(service=service, start=START, minutes=2, requests=150)
    p99 = _trace(latency_figure(_dashboard(service), "e2e"), "P99")
    assert "rests on 150 requests" in p99.hovertext[0]


def test_points_with_too_few_requests_are_marked_insufficient(service):
    seed_traffic(service=service, start=START, minutes=3, requests=50)
    fig = latency_figure(_dashboard(service), "e2e")
    p99 = _trace(fig, "P99")
    assert p99.marker.symbol == "circle-open"  # every point: one scalar
    assert "insufficient data" in p99.hovertext[0]
    assert _trace(fig, "P50").marker.symbol == "circle"


def test_only_the_points_with_too_few_requests_are_open(service):
    seed_traffic(service=service, start=START, minutes=2, requests=50)
    seed_traffic(
        service=service, host="b", start=START + timedelta(minutes=2), minutes=1, requests=150
    )
    p99 = _trace(latency_figure(_dashboard(service), "e2e"), "P99")
    assert list(p99.marker.symbol) == ["circle-open", "circle-open", "circle"]


def test_latency_figure_without_samples_says_which_service_has_no_agent(service):
    fig = latency_figure(_dashboard(service), "e2e")
    assert is_empty(fig) == (
        "No samples from any agent in this range — is an agent pushing for chat-7b?"
    )
    assert len(fig.data) == 0


def test_host_filter_keeps_only_that_hosts_traffic(service):
    seed_traffic(service=service, host="a", start=START, minutes=10)
    seed_traffic(service=service, host="b", start=START + timedelta(minutes=10), minutes=10)
    fig = latency_figure(_dashboard(service, hosts=["b"]), "e2e")
    assert len(_trace(fig, "P50").x) == 10


def test_seven_days_read_hourly_points(service, now):
    seed_traffic(service=service, start=END - timedelta(hours=3), minutes=180)
    d = service_dashboard(service=service, start=END - timedelta(days=7), end=END)
    fig = latency_figure(d, "e2e")
    assert d.metrics.resolution_s == 3600
    assert len(_trace(fig, "P99").x) == 3


def test_throughput_figure_draws_qps_and_token_rates(service):
    seed_traffic(service=service, start=START, minutes=10, requests=120, tokens_per_second=1500)
    fig = throughput_figure(_dashboard(service))
    assert [t.name for t in fig.data] == [
        "QPS (requests/s)",
        "generated tokens/s",
        "prompt tokens/s",
    ]
    assert _trace(fig, "QPS (requests/s)").y[0] == pytest.approx(2.0)
    assert _trace(fig, "generated tokens/s").y[0] == pytest.approx(1500)
    assert fig.layout.yaxis.title.text == "requests/s"
    assert fig.layout.yaxis2.title.text == "tokens/s"


def test_gpu_figure_shows_util_beside_sm_active_and_dram(service):
    seed_traffic(service=service, start=START, minutes=10, util=0.97, sm_active=0.31)
    fig = gpu_busy_figure(_dashboard(service))
    names = [t.name for t in fig.data]
    assert names == [
        "GPU-Util (any kernel running)",
        "SM active",
        "DRAM bandwidth utilization",
    ]
    assert _trace(fig, "GPU-Util (any kernel running)").y[0] == pytest.approx(97)
    assert _trace(fig, "SM active").y[0] == pytest.approx(31)


def test_gpu_figure_notes_when_sm_and_dram_are_not_reported(service):
    seed_traffic(service=service, start=START, minutes=5, sm_active=None, dram_active=None)
    fig = gpu_busy_figure(_dashboard(service))
    assert [t.name for t in fig.data] == ["GPU-Util (any kernel running)"]
    note = fig.layout.annotations[0].text.replace("<br>", " ")
    assert "SM active and DRAM bandwidth utilization not reported" in note


def test_memory_figure_draws_memory_used_and_kv_cache(service):
    seed_traffic(service=service, start=START, minutes=5, kv=0.8)
    fig = memory_figure(_dashboard(service))
    used = _trace(fig, "GPU memory used (peak, all GPUs)")
    assert used.y[0] == pytest.approx(75.0)  # 60 of 80 GB
    assert _trace(fig, "KV cache usage (engine)").y[0] == pytest.approx(80.0)


def test_economics_figure_reproduces_the_seed_cost_and_margin(service):
    # The seed: 10 per GPU-hour, 2,000 tokens/s -> 1.39 per Mtok; at 5 per Mtok, 72% margin.
    service.replicas = 1
    service.save()
    seed_traffic(service=service, start=START, minutes=5, tokens_per_second=2000)
    fig = economics_figure(_dashboard(service))
    assert _trace(fig, "cost per Mtok").y[0] == pytest.approx(1.389, abs=0.001)
    assert _trace(fig, "margin (%)").y[0] == pytest.approx(72.2, abs=0.1)
    assert fig.layout.yaxis.title.text == "USD per Mtok"


def test_deploys_experiments_and_alerts_are_drawn_on_the_time_axis(service, owner):
    seed_traffic(service=service, start=START, minutes=30)
    config = ConfigVersion.objects.create(service=service, version=1, config={"a": 1})
    ConfigVersion.objects.filter(pk=config.pk).update(created_at=START + timedelta(minutes=10))
    baseline = make_baseline(service)
    Experiment.objects.create(
        service=service,
        title="Batch 32",
        hypothesis="More throughput",
        variable_key="max_num_seqs",
        value_from="16",
        value_to="32",
        before=baseline,
        run_on=END.date(),
    )
    d = _dashboard(service)
    fig = latency_figure(d, "e2e")
    kinds = sorted(m.kind for m in d.markers)
    assert kinds == ["deploy", "experiment"]
    assert len(fig.layout.shapes) == 2
    assert {a.text for a in fig.layout.annotations} == {"⬆", "⚗"}


def test_every_panel_has_a_title_axis_titles_and_a_legend(service):
    seed_traffic(service=service, start=START, minutes=5)
    for panel in service_panels(_dashboard(service)):
        if panel.id == "latency-itl":  # seeded rows are per request: no token gaps to draw
            assert "carry no token gaps" in panel.figure["layout"]["meta"]["empty"]
            continue
        layout = go.Figure(panel.figure).layout
        assert layout.title.text, panel.id
        assert layout.yaxis.title.text, panel.id
        assert layout.xaxis.title.text == "time (UTC)", panel.id
        assert layout.showlegend is True, panel.id


def test_every_panel_says_why_it_is_empty_when_nothing_arrived(service):
    for panel in service_panels(_dashboard(service)):
        assert is_empty(panel.figure), panel.id


def test_the_itl_chart_draws_no_baseline_band_since_baselines_record_no_itl(service):
    """ITL (a live, engine-side figure) has no baseline column: the chart leaves the band out
    instead of failing (the panels answered 500 for every service with a baseline)."""
    make_baseline(service)
    fig = {"data": [], "layout": {}}
    figures._add_baseline_band(fig, _dashboard(service), "itl")
    assert fig["data"] == []
