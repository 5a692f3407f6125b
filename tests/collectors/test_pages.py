from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from collectors.models import Host
from collectors.services.rollups import rollup_pending
from tests.factories.batches import make_batch, push

pytestmark = pytest.mark.django_db


def test_the_live_page_shows_the_latest_minutes(client, owner, agent_client, service):
    push(agent_client, make_batch())
    rollup_pending()
    client.force_login(owner)
    response = client.get(reverse("collectors:service_live", args=["chat-7b"]))
    assert response.status_code == 200
    body = response.content.decode()
    assert "gpu-node-07" in body
    assert "Per minute" in body
    assert "per Mtok" in body


def test_the_live_page_says_when_there_is_no_data(client, owner, service):
    client.force_login(owner)
    response = client.get(reverse("collectors:service_live", args=["chat-7b"]))
    assert "No data in the last 30 minutes" in response.content.decode()


def test_the_live_page_needs_a_login(client, service):
    response = client.get(reverse("collectors:service_live", args=["chat-7b"]))
    assert response.status_code == 302


def test_the_hosts_page_shows_a_down_target_and_its_error(client, owner, service):
    Host.objects.create(
        name="pulled-9",
        pull_url="http://10.0.0.9:8000/metrics",
        pull_kind="vllm",
        pull_service=service,
        status="down",
        last_error="ConnectTimeout: timed out",
    )
    client.force_login(owner)
    body = client.get(reverse("collectors:hosts")).content.decode()
    assert "pulled-9" in body
    assert "ConnectTimeout: timed out" in body
    assert "http://10.0.0.9:8000/metrics" in body


def test_the_pages_query_count_is_bounded(
    client, owner, agent_client, service, django_assert_max_num_queries
):
    for _ in range(3):
        push(agent_client, make_batch())
    Host.objects.create(name="other")
    rollup_pending()
    client.force_login(owner)
    with django_assert_max_num_queries(10):
        client.get(reverse("collectors:service_live", args=["chat-7b"]))
    with django_assert_max_num_queries(5):  # + the quarantined batch counts
        client.get(reverse("collectors:hosts"))


def test_the_hosts_page_shows_a_pushing_host_as_receiving(client, owner, agent_client, service):
    push(agent_client, make_batch())
    client.force_login(owner)
    body = client.get(reverse("collectors:hosts")).content.decode()
    assert '<span class="badge badge-ok">receiving</span>' in body


def test_the_hosts_page_shows_a_host_quiet_for_an_hour_as_silent(client, owner, host):
    Host.objects.filter(pk=host.pk).update(last_seen_at=timezone.now() - timedelta(hours=1))
    client.force_login(owner)
    body = client.get(reverse("collectors:hosts")).content.decode()
    assert '<span class="badge badge-bad">silent</span>' in body


def test_the_hosts_page_links_a_hosts_services_to_live_dashboard_and_dossier(
    client, owner, agent_client, service
):
    push(agent_client, make_batch())
    rollup_pending()
    client.force_login(owner)
    body = client.get(reverse("collectors:hosts")).content.decode()
    assert f'href="{reverse("collectors:service_live", args=["chat-7b"])}"' in body
    assert f'href="{reverse("dashboards:service", args=["chat-7b"])}"' in body
    assert f'href="{reverse("dossiers:dossier", args=["chat-7b"])}"' in body


def test_the_hosts_page_says_how_to_start_when_there_is_no_host(client, owner):
    client.force_login(owner)
    body = client.get(reverse("collectors:hosts")).content.decode()
    assert "No host has pushed or been pulled yet" in body
    assert "create_agent_token --host H" in body


def test_the_live_page_links_to_the_full_dashboard(client, owner, service):
    client.force_login(owner)
    body = client.get(reverse("collectors:service_live", args=["chat-7b"])).content.decode()
    assert f'href="{reverse("dashboards:service", args=["chat-7b"])}">Full dashboard' in body


def test_the_live_page_shows_each_gpus_latest_minute(client, owner, agent_client, service):
    push(agent_client, make_batch())
    rollup_pending()
    client.force_login(owner)
    body = client.get(reverse("collectors:service_live", args=["chat-7b"])).content.decode()
    assert "NVIDIA H100 80GB HBM3" in body
    assert "77.7 GB" in body
