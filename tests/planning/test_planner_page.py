"""The planner page: the plan for the service's SLOs, and a bad field named, never a 500."""

import pytest

pytestmark = pytest.mark.django_db


def test_the_page_plans_for_the_service_slo_by_default(client, owner, swept):
    client.force_login(owner)
    page = client.get(f"/services/{swept.slug}/planner/", {"load": "10"}).content.decode()
    assert "TTFT P99 ≤ 500 ms" in page and "the service's SLOs" in page


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"slo": "ttft_p99_ms=soon"}, "slo"),
        ({"headroom": "1.5"}, "headroom"),
        ({"load": "0"}, "load"),
        ({"load": "5", "growth": "2"}, "growth"),
    ],
)
def test_a_bad_field_is_named_on_the_page_with_400(client, owner, swept, query, named):
    client.force_login(owner)
    response = client.get(f"/services/{swept.slug}/planner/", query)
    assert response.status_code == 400
    assert f"{named}:" in response.content.decode()
