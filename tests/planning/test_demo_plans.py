"""Every demo service has a plan: a sweep, a per-replica limit inside it, and its page."""

import pytest

from planning.plan import WITHIN, plan_for


@pytest.fixture
def demo_services(demo_fleet, db):
    return demo_fleet.services


def test_every_demo_service_has_a_per_replica_limit_inside_its_sweep(demo_services):
    for slug, service in demo_services.items():
        per = plan_for(service, load=10).per_replica
        assert per.result.status == WITHIN, slug
        assert per.max_request_rate.value > 0, slug


def test_every_demo_service_planner_page_shows_its_plan(demo_services, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-1"))
    for slug in demo_services:
        response = client.get(f"/services/{slug}/planner/", {"load": "10"})
        assert response.status_code == 200, slug
        assert b'id="plan-table"' in response.content and b"planner-chart-data" in response.content
