from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from tests.collectors.helpers import START, fill

pytestmark = pytest.mark.django_db

URL = "/api/v1/services/chat-7b/metrics/"
RANGE = {"start": "2025-03-03T10:00:00Z", "end": "2025-03-03T10:05:00Z"}


@pytest.fixture
def reader(owner) -> APIClient:
    client = APIClient()
    client.force_login(owner)
    return client


def test_it_returns_merged_percentiles_with_counts_and_bounds(reader, service):
    fill(service, minutes=5)
    body = reader.get(URL, RANGE).json()
    assert body["resolution_s"] == 60
    assert body["hosts"] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert len(body["points"]) == 5
    p99 = body["overall_latency_ms"]["e2e"][3]
    assert set(p99) == {
        "q", "value", "count", "lower", "upper", "method", "above_last_edge", "below_first_edge",
            "sufficient", "vantage", "wide_bucket",
    }  # fmt: skip
    assert (p99["q"], p99["count"], p99["method"]) == (0.99, 5 * 300, "sketch")
    assert p99["lower"] <= p99["value"] <= p99["upper"]
    point = body["points"][0]
    assert point["t"] == "2025-03-03T10:00:00+00:00"
    assert point["qps"] == pytest.approx(5.0)
    assert set(point["latency_ms"]) == {"e2e", "ttft", "tpot", "itl", "queue", "prefill", "decode"}


def test_it_filters_hosts(reader, service):
    fill(service, minutes=2)
    body = reader.get(URL, {**RANGE, "hosts": "gpu-2,gpu-3"}).json()
    assert body["hosts"] == ["gpu-2", "gpu-3"]
    assert body["points"][0]["requests"] == 100


def test_an_agent_token_can_read_it(agent_client, service):
    assert agent_client.get(URL, RANGE).status_code == 200


def test_anonymous_callers_are_refused(client, service):
    assert client.get(URL, RANGE).status_code in (401, 403)


def test_an_unknown_service_is_404(reader, service):
    assert reader.get("/api/v1/services/nope/metrics/", RANGE).status_code == 404


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"start": "yesterday"}, "start"),
        ({"start": "2025-03-03T10:00:00"}, "start"),
        ({"start": "2025-03-03T11:00:00Z", "end": "2025-03-03T10:00:00Z"}, "start"),
        ({"end": "2999-01-01T00:00:00Z"}, "end"),
        ({**RANGE, "resolution": "17"}, "resolution"),
    ],
)
def test_bad_parameters_are_400_naming_them(reader, service, params, field):
    response = reader.get(URL, params)
    assert response.status_code == 400
    assert field in response.json()


def test_its_query_count_is_bounded(reader, service, django_assert_max_num_queries):
    fill(service, minutes=30)
    # session + user + service + merged rows + their distributions (whole-range percentiles)
    # + host names + GPU rows, whatever the number of minutes or hosts
    with django_assert_max_num_queries(7):
        reader.get(
            URL, {"start": RANGE["start"], "end": (START + timedelta(minutes=30)).isoformat()}
        )
