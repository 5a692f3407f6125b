"""The demo's diagnosis pages after ten minutes of their simulated agents' scrapes: the service
whose engine runs short of KV-cache room is told so by its preemptions; the others are not."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from collectors.exposition.engines import ENGINES
from collectors.models import Host
from collectors.services.rollups import rollup_pending
from collectors.services.tokens import token_issue
from demo.profile import KV_PRESSED_SERVICE, demo_profile
from demo.simulator import Simulator
from tests.factories.batches import INGEST_URL, make_batch, recent_minute
from tests.support import StepClock

pytestmark = pytest.mark.django_db


@pytest.fixture
def fleet(demo_fleet, db):
    return demo_fleet.services


@pytest.fixture
def agent_client(db) -> APIClient:
    client = APIClient()
    token = token_issue(host=Host.objects.create(name="demo-gpu-01"))[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client


def diagnosis_after_scrapes(fleet, slug, agent_client, client):
    """The service's diagnosis page (last hour) after its simulated engine's scrapes, one a
    minute for ten minutes, pushed and rolled up as `run_demo`'s agent has them."""
    service = fleet[slug]
    clock = StepClock(recent_minute(15).timestamp())
    sim = Simulator(host="demo-gpu-01", services=[slug], profiles={slug: demo_profile(service)},
                    seed=3, clock=clock, warmup_s=0.0)  # fmt: skip
    for _ in range(11):
        _, scrapes, _ = sim.step()
        batch = make_batch(host="demo-gpu-01", gpus=[], requests=[], scrapes=scrapes)
        answer = agent_client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert answer.status_code == 202, answer.content
        clock.now += 60.0
    rollup_pending()
    return client.get(f"/dashboards/services/{slug}/diagnosis/?range=1h").context["diagnosis"]


def test_the_kv_pressed_service_has_the_fullest_kv_cache_of_the_engines_counting_preemptions(
    fleet,
):
    counting = [
        s for s in fleet.values()
        if any(r.canonical == "preemptions" for r in ENGINES[s.engine].rules)
    ]  # fmt: skip

    def kv_usage(service):
        profile = demo_profile(service)
        return profile.expected_kv_usage(profile.qps)

    assert max(counting, key=kv_usage).slug == KV_PRESSED_SERVICE


def test_the_kv_pressed_services_diagnosis_proposes_kv_cache_room_from_its_preemptions(
    fleet, agent_client, outsider_client
):
    diagnosis = diagnosis_after_scrapes(fleet, KV_PRESSED_SERVICE, agent_client, outsider_client)
    (proposal,) = [p for p in diagnosis.proposals if p.rule == "memory_capacity"]
    assert "preemptions for KV-cache room (3% of" in proposal.evidence


def test_a_healthy_services_diagnosis_proposes_no_kv_cache_room_and_shows_no_preemptions(
    fleet, agent_client, outsider_client
):
    diagnosis = diagnosis_after_scrapes(fleet, "support-chat-7b", agent_client, outsider_client)
    numbers = {n.label: n.shown for n in diagnosis.numbers}
    assert (numbers["Requests preempted"], [p.rule for p in diagnosis.proposals if
            p.rule == "memory_capacity"]) == ("0", [])  # fmt: skip
