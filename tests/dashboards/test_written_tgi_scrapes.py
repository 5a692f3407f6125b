"""TGI 3.3.7's router, scrapes written here from its source (tests/fixtures/real/metrics,
SOURCES.md), pushed through the ingest API and rolled up: what the claims check then says."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from rest_framework.test import APIClient

from collectors.models import Host
from collectors.services.rollups import rollup_pending
from collectors.services.tokens import token_issue
from dashboards.claims import check_claims
from tests.factories.batches import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db

# After one success, then: 6 successes (one best_of=3), 2 streams dropped, 1 failed generation,
# 1 refused by validation, 1 at the concurrency limit. Between the two scrapes the prompt
# histogram gained 11 observations and 2,000 tokens, the output one 6 and 426 (SOURCES.md).
FAILURES = (
    "written-here-tgi-3.3.7-failures-best-of-before.prom",
    "written-here-tgi-3.3.7-failures-best-of.prom",
)


def test_live_prompt_tokens_per_request_are_over_the_prompts_tgi_observed(
    db, service, fixtures_dir
):
    client = APIClient()
    token = token_issue(host=Host.objects.create(name="gpu-node-07"))[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    t0 = recent_minute() + timedelta(seconds=5)
    for ts, name in ((t0, FAILURES[0]), (t0 + timedelta(seconds=60), FAILURES[1])):
        text = (fixtures_dir / "real" / "metrics" / name).read_text()
        scrape = {"ts": rfc3339(ts), "service": service.slug, "source": "tgi", "exposition": text}
        batch = make_batch(gpus=[], requests=[], scrapes=[scrape])
        response = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert response.status_code == 202, response.content
    rollup_pending()
    start = recent_minute() - timedelta(minutes=1)
    check = check_claims(
        [service], {service.pk: None}, start=start, end=start + timedelta(minutes=5)
    )[service.pk]
    # Over the 6 successes instead, 333.3 prompt tokens: the prompts of the dropped, failed and
    # extra best_of sequences counted without them (the successes' own prompts: 163.3).
    assert (check.live_workload.prompt_tokens, check.live_workload.output_tokens) == (
        pytest.approx(2000 / 11),
        pytest.approx(426 / 6),
    )
