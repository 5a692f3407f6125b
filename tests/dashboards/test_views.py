"""Dashboard pages and fragments: access, range handling, and query budgets."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from dossiers.models import ConfigVersion
from dossiers.services import config_version_create
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic

pytestmark = pytest.mark.django_db


@pytest.fixture
def logged_in(client, outsider):
    client.force_login(outsider)
    return client


def _panels(client, slug="chat-7b", query="range=1h"):
    url = reverse("dashboards:service_panels", args=[slug]) + "?" + query
    return client.get(url)


def test_the_service_dashboard_needs_a_login(client, service):
    response = client.get(reverse("dashboards:service", args=["chat-7b"]))
    assert response.status_code == 302
    assert "/accounts/login/" in response["Location"]


def test_any_logged_in_user_reads_a_service_dashboard(logged_in, service):
    response = logged_in.get(reverse("dashboards:service", args=["chat-7b"]))
    assert response.status_code == 200
    assert b'data-panels-url="/dashboards/services/chat-7b/panels.json?range=24h"' in (
        response.content
    )


def test_an_unknown_service_is_404(logged_in, db):
    assert logged_in.get(reverse("dashboards:service", args=["nope"])).status_code == 404


def test_panels_json_returns_every_chart(logged_in, service, now):
    seed_traffic(service=service, start=now - timedelta(minutes=30), minutes=20)
    body = _panels(logged_in).json()
    assert [p["id"] for p in body["panels"]] == [
        "latency-e2e",
        "latency-ttft",
        "latency-tpot",
        "latency-itl",
        "throughput",
        "gpu-busy",
        "memory",
        "economics",
    ]
    assert body["resolution_s"] == 60
    assert body["panels"][0]["empty"] is None
    assert body["panels"][0]["figure"]["data"][0]["name"] == "P50"


def test_panels_json_names_the_empty_state(logged_in, service):
    body = _panels(logged_in).json()
    assert body["panels"][0]["empty"].startswith("No samples from any agent in this range")


def test_a_bad_range_is_answered_with_the_field_at_fault(logged_in, service):
    response = _panels(logged_in, query="range=2w")
    assert response.status_code == 400
    assert response.json() == {"range": ["'2w' is not one of 1h, 24h, 7d, 30d, custom."]}


def test_a_custom_range_with_end_before_start_is_refused(logged_in, service):
    response = _panels(logged_in, query="range=custom&start=2026-11-02T00:00&end=2026-11-01T00:00")
    assert response.json() == {"start": ["Must be before end."]}


def test_the_page_falls_back_to_24h_and_shows_the_range_error(logged_in, service):
    response = logged_in.get(reverse("dashboards:service", args=["chat-7b"]) + "?range=2w")
    assert response.status_code == 200
    assert b"Showing the last 24 h instead." in response.content


def test_the_timeline_fragment_lists_deploys_newest_first(logged_in, service):
    config_version_create(service=service, config={"v": 1})
    config_version_create(service=service, config={"v": 2})
    response = logged_in.get(reverse("dashboards:service_timeline", args=["chat-7b"]))
    content = response.content.decode()
    assert content.index("Config v2 deployed") < content.index("Config v1 deployed")
    assert "<html" not in content


def test_the_timeline_fragment_says_when_there_is_nothing(logged_in, service):
    response = logged_in.get(reverse("dashboards:service_timeline", args=["chat-7b"]))
    assert b"Nothing on the timeline yet" in response.content


def test_the_fleet_dashboard_lists_every_service_with_links(logged_in, service, team):
    make_service(team, "embed-1b")
    response = logged_in.get(reverse("dashboards:fleet"))
    content = response.content.decode()
    assert 'href="/services/embed-1b/"' in content
    assert 'href="/dashboards/services/chat-7b/"' in content
    assert 'id="fleet-panels" type="application/json"' in content


def _count_queries(client, url) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return len(ctx.captured_queries)


def test_service_panels_queries_do_not_grow_with_minutes_or_hosts(logged_in, service, now):
    make_baseline(service)
    seed_traffic(service=service, start=now - timedelta(minutes=50), minutes=5)
    url = reverse("dashboards:service_panels", args=["chat-7b"]) + "?range=1h"
    few = _count_queries(logged_in, url)
    seed_traffic(service=service, host="h2", start=now - timedelta(minutes=45), minutes=40)
    seed_traffic(service=service, host="h3", start=now - timedelta(minutes=45), minutes=40)
    assert _count_queries(logged_in, url) == few
    assert few <= 10


def test_service_page_queries_are_bounded(logged_in, service, now):
    seed_traffic(service=service, start=now - timedelta(minutes=50), minutes=30)
    assert _count_queries(logged_in, reverse("dashboards:service", args=["chat-7b"])) <= 5


def test_fleet_queries_do_not_grow_with_services_or_minutes(logged_in, service, team, now):
    seed_traffic(service=service, start=now - timedelta(minutes=50), minutes=5)
    url = reverse("dashboards:fleet") + "?range=1h"
    few = _count_queries(logged_in, url)
    for i in range(4):
        other = make_service(team, f"svc-{i}")
        make_baseline(other)
        seed_traffic(service=other, host=f"h{i}", start=now - timedelta(minutes=50), minutes=40)
    assert _count_queries(logged_in, url) == few
    assert few <= 10


def test_the_fleet_page_embeds_its_figures_as_json(logged_in, service, now):
    seed_traffic(service=service, start=now - timedelta(minutes=50), minutes=5)
    content = logged_in.get(reverse("dashboards:fleet") + "?range=1h").content.decode()
    start = content.index('type="application/json">') + len('type="application/json">')
    payload = json.loads(content[start : content.index("</script>", start)])
    assert [p["id"] for p in payload["panels"]] == ["fleet-p99", "fleet-cost", "fleet-gpu-hours"]


def test_panels_json_can_return_a_subset_for_the_dossier(logged_in, service):
    body = _panels(logged_in, query="range=24h&only=latency-e2e,economics").json()
    assert [p["id"] for p in body["panels"]] == ["latency-e2e", "economics"]


def test_panels_json_refuses_an_unknown_panel(logged_in, service):
    response = _panels(logged_in, query="only=latency-p42")
    assert response.status_code == 400
    assert list(response.json()) == ["only"]


def test_timeline_queries_do_not_grow_with_entries(logged_in, service):
    url = reverse("dashboards:service_timeline", args=["chat-7b"])
    ConfigVersion.objects.create(service=service, version=1, config={})
    few = _count_queries(logged_in, url)
    for version in range(2, 12):
        ConfigVersion.objects.create(service=service, version=version, config={})
    assert _count_queries(logged_in, url) == few
