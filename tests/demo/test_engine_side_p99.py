"""RAG Answers' live P99 read from its simulated engine's histograms alone (no request rows, as
a Prometheus-fed or scrape-only service has it): the simulator serves its baseline (its own
rows' P99 is about 5.4 s, under the 6 s SLO), but SGLang's end-to-end buckets (vLLM's edges)
jump from 5 to 10 s, so the P99 interpolated inside that bucket reads about 8.3 s. Pages must
say the bucket and give no SLO verdict the bucket cannot support."""

from __future__ import annotations

import json
import re

import pytest
from rest_framework.test import APIClient

from collectors.models import Host
from collectors.services.rollups import rollup_pending
from collectors.services.tokens import token_issue
from demo.profile import demo_profile
from demo.simulator import Simulator
from tests.factories.batches import INGEST_URL, make_batch, recent_minute
from tests.support import StepClock

pytestmark = pytest.mark.django_db

SLUG = "rag-answers-70b"
BUCKET = "in 5,000\u201310,000, est."


def push_engine_scrapes(service) -> None:
    """Ten minutes of the service's simulated engine (its own engine's /metrics), scrapes only,
    pushed and rolled up as `run_demo`'s agent has them (RAG Answers: about 3,600 requests,
    enough for a P99)."""
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION=f"Token {token_issue(host=Host.objects.create(name='demo-gpu-04'))[1]}"
    )
    clock = StepClock(recent_minute(15).timestamp())
    sim = Simulator(host="demo-gpu-04", services=[service.slug],
                    profiles={service.slug: demo_profile(service)},
                    engines={service.slug: service.engine}, seed=3, clock=clock,
                    warmup_s=0.0)  # fmt: skip
    for _ in range(11):
        _, scrapes, _ = sim.step()
        batch = make_batch(host="demo-gpu-04", gpus=[], requests=[], scrapes=scrapes)
        answer = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert answer.status_code == 202, answer.content
        clock.now += 60.0
    rollup_pending()


@pytest.fixture
def scraped(demo_fleet, db) -> None:
    push_engine_scrapes(demo_fleet.services[SLUG])


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def _fleet_cell(client) -> tuple[str, str]:
    """RAG Answers' P99 end-to-end cell on the fleet page: its attributes, and its text."""
    page = client.get("/dashboards/?range=1h").content.decode()
    row = page[page.index(f'data-service="{SLUG}"') :]
    cell = re.search(r'<td data-figure="p99"([^>]*)>(.*?)</td>', row, re.S)
    assert cell, "the fleet table has no P99 cell for RAG Answers"
    return cell.group(1), _text(cell.group(2))


def test_the_fleet_table_shows_the_engine_p99_with_its_bucket(scraped, outsider_client):
    _, shown = _fleet_cell(outsider_client)
    assert BUCKET in shown and "engine histogram" in shown


def test_the_fleet_table_gives_no_slo_verdict_when_the_slo_lies_inside_the_bucket(
    scraped, outsider_client
):
    attrs, _ = _fleet_cell(outsider_client)
    classes = re.search(r'class="([^"]*)"', attrs).group(1).split()
    assert "neg" not in classes and "pos" not in classes and 'data-slo="unsure"' in attrs


def test_the_live_page_shows_the_engine_p99_with_its_bucket(scraped, outsider_client):
    page = outsider_client.get(f"/collectors/services/{SLUG}/").content.decode()
    section = page[page.index('id="window"') : page.index('id="minutes"')]
    e2e = _text(section[section.index("e2e") :].split("</tr>")[0])
    assert BUCKET in e2e


def test_the_p99_alert_says_its_bucket_and_that_the_slo_lies_inside_it(scraped, demo_fleet):
    from alerts.services import ensure_default_rules, evaluate_all

    service = demo_fleet.services[SLUG]
    ensure_default_rules(service)
    evaluate_all()
    rule = service.alert_rules.get(kind="p99_e2e")
    assert "in 5,000 ms\u201310,000 ms, est." in rule.health_reason
    assert "the bound 6000 ms lies inside that bucket" in rule.health_reason
