"""A percentile withheld for too few requests says why, on the run page: the "—" of a P999
over 300 requests read as if the tool had not measured it."""

import pytest
from django.urls import reverse

from dossiers.selectors import latency_table
from tests.factories.catalog import make_baseline, make_load_test, make_service

pytestmark = pytest.mark.django_db


def test_a_withheld_p999_cell_says_how_many_requests_it_needs(team):
    run = make_baseline(make_service(team, "few-svc"), request_count=300)
    p999 = next(c for c in latency_table(run)[0].cells if c.p == "p999")
    assert p999.value is None
    assert p999.why == "needs at least 1,000 requests; this run has 300"


def test_the_run_page_gives_the_reason_beside_the_dash(owner_client, service):
    run = make_load_test(service, request_count=300)
    html = owner_client.get(reverse("loadtests:detail", args=[service.slug, run.pk])).content
    html = html.decode()
    cell = html[html.index('data-withheld="p999"') - 80 :]
    cell = cell[: cell.index("</td>")]
    assert 'title="Insufficient data: needs at least 1,000 requests; this run has 300"' in cell
    assert "—" in cell
    assert "P999 needs at least 1,000 requests; this run has 300" in html
