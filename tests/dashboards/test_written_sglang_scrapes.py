"""SGLang 0.5.23's own metric code run here (tests/fixtures/real/metrics, SOURCES.md), pushed
through the ingest API and rolled up: what the diagnosis page then says."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from collectors.services.rollups import rollup_pending
from tests.factories.batches import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db

DIAGNOSIS_URL = "/dashboards/services/chat-7b/diagnosis/?range=1h"
# Before any request, then after 6 streams run to their end (two decode steps without KV room
# retracted 2, then 1 of them, which recomputed), 1 abandoned stream, 1 abandoned queued request
# and 2 refused with a 503: SGLang counts 7 requests, 2 errors and 2 aborts, the abandoned
# stream in both its requests and its aborts (docs/integrations.md), so 11 "finished".
CAPTURE = (
    "written-here-sglang-0.5.23-before-any-request.prom",
    "written-here-sglang-0.5.23-aborts-errors-priority.prom",
)


@pytest.fixture
def sglang_service(service):
    service.engine = "sglang"
    service.save()
    return service


def push_capture(agent_client, service, fixtures_dir) -> None:
    t0 = recent_minute() + timedelta(seconds=5)
    for ts, name in ((t0, CAPTURE[0]), (t0 + timedelta(seconds=30), CAPTURE[1])):
        text = (fixtures_dir / "real" / "metrics" / name).read_text()
        scrape = {"ts": rfc3339(ts), "service": service.slug, "source": "sglang"}
        batch = make_batch(gpus=[], requests=[], scrapes=[{**scrape, "exposition": text}])
        response = agent_client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert response.status_code == 202, response.content
    rollup_pending()


def test_diagnosis_proposes_kv_cache_room_from_sglangs_retracted_requests(
    agent_client, sglang_service, fixtures_dir, outsider_client
):
    push_capture(agent_client, sglang_service, fixtures_dir)
    diagnosis = outsider_client.get(DIAGNOSIS_URL).context["diagnosis"]
    (proposal,) = [p for p in diagnosis.proposals if p.rule == "memory_capacity"]
    assert proposal.evidence == ("3 preemptions for KV-cache room (27% of 11 finished requests)")


def test_the_diagnosis_page_shows_the_requests_sglang_retracted(
    agent_client, sglang_service, fixtures_dir, outsider_client
):
    push_capture(agent_client, sglang_service, fixtures_dir)
    numbers = {
        n.label: n.shown for n in outsider_client.get(DIAGNOSIS_URL).context["diagnosis"].numbers
    }
    assert numbers["Requests preempted"] == "3"
