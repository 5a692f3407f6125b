"""Baseline vs candidate load-test comparison figures."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboards.figures.common import is_empty
from dashboards.figures.loadtests import comparison_panels, histogram_figure, percentiles_figure
from dashboards.selectors import loadtest_comparison
from tests.factories.catalog import make_baseline, make_load_test

pytestmark = pytest.mark.django_db


def test_percentile_bars_put_baseline_and_candidate_side_by_side(service):
    make_baseline(service)
    candidate = make_load_test(service)
    c = loadtest_comparison(service=service, candidate_id=candidate.pk)
    fig = percentiles_figure(c, "e2e")
    assert [t.name for t in fig.data] == [
        "baseline: vLLM 0.6.3, batch 16",
        "candidate: candidate 0.7.0",
    ]
    assert list(fig.data[0].x) == ["P50", "P90", "P95", "P99", "P999"]
    assert list(fig.data[1].y) == [900.0, 1300.0, None, 1700.0, None]
    assert fig.layout.barmode == "group"


def test_histograms_come_from_the_per_request_sketches_as_shares(service):
    source = make_load_test(service, "baseline run", e2e=[100.0] * 50 + [200.0] * 50)
    make_baseline(service, source_load_test=source)
    candidate = make_load_test(service, e2e=[400.0] * 10)
    c = loadtest_comparison(service=service, candidate_id=candidate.pk)
    fig = histogram_figure(c, "e2e")
    baseline, cand = fig.data
    assert sum(baseline.y) == pytest.approx(100.0)
    assert len(baseline.x) == 2  # two values, two bins
    assert list(cand.y) == [pytest.approx(100.0)]
    assert fig.layout.xaxis.type == "log"
    assert [p.id for p in comparison_panels(c)][-1] == "histogram-e2e"


def test_histogram_without_per_request_values_says_so(service):
    make_baseline(service)
    c = loadtest_comparison(service=service, candidate_id=make_load_test(service).pk)
    assert "Neither run kept per-request values" in is_empty(histogram_figure(c, "e2e"))


def test_a_candidate_of_another_service_is_not_compared(service, team):
    from tests.factories.catalog import make_service

    other = make_service(team, "embed-1b")
    make_baseline(service)
    assert loadtest_comparison(service=service, candidate_id=make_load_test(other).pk) is None


def test_the_compare_page_draws_the_chosen_runs(client, owner, service):
    make_baseline(service)
    candidate = make_load_test(service)
    client.force_login(owner)
    url = reverse("dashboards:loadtest_compare", args=["chat-7b"])
    response = client.get(f"{url}?candidate={candidate.pk}")
    assert response.status_code == 200
    assert b'id="compare-panels"' in response.content


def test_the_compare_page_warns_when_the_workload_shapes_differ(client, owner, service):
    make_baseline(service, concurrency=16)
    candidate = make_load_test(service, concurrency=32)
    client.force_login(owner)
    url = reverse("dashboards:loadtest_compare", args=["chat-7b"])
    page = client.get(f"{url}?candidate={candidate.pk}").content.decode()
    assert "the release gate refuses this pair" in page
    assert "Different concurrency: baseline 16, candidate 32" in page


def test_the_compare_page_says_nothing_of_shape_when_the_shapes_match(client, owner, service):
    make_baseline(service, concurrency=16)
    candidate = make_load_test(service, concurrency=16)
    client.force_login(owner)
    url = reverse("dashboards:loadtest_compare", args=["chat-7b"])
    assert b"data-shape-warning" not in client.get(f"{url}?candidate={candidate.pk}").content
