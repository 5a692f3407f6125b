"""Triton with the TensorRT-LLM backend, scrapes written here from the backend 0.19's own source
(tests/fixtures/real/metrics, SOURCES.md), pushed through the ingest API and rolled up: what the
claims check then says."""

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

# The freshly loaded model, then 8 requests later: 7 succeeded, 1 failed in the executor; the
# backend's histograms hold all 8 (3,013 input and 1,915 output tokens).
TOKENS = (
    "written-here-triton-trtllm-0.19-token-histograms-before.prom",
    "written-here-triton-trtllm-0.19-token-histograms.prom",
)


def test_live_tokens_per_request_are_the_backends_over_the_requests_it_observed(
    db, service, fixtures_dir
):
    client = APIClient()
    token = token_issue(host=Host.objects.create(name="gpu-node-07"))[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    t0 = recent_minute() + timedelta(seconds=5)
    for ts, name in ((t0, TOKENS[0]), (t0 + timedelta(seconds=60), TOKENS[1])):
        text = (fixtures_dir / "real" / "metrics" / name).read_text()
        scrape = {
            "ts": rfc3339(ts),
            "service": service.slug,
            "source": "triton",
            "exposition": text,
        }
        batch = make_batch(gpus=[], requests=[], scrapes=[scrape])
        response = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
        assert response.status_code == 202, response.content
    rollup_pending()
    start = recent_minute() - timedelta(minutes=1)
    check = check_claims(
        [service], {service.pk: None}, start=start, end=start + timedelta(minutes=5)
    )[service.pk]
    # Over Triton's 7 successes instead, 430.4 and 273.6: the failed request's prompt counted
    # without the request.
    assert (check.live_workload.prompt_tokens, check.live_workload.output_tokens) == (
        pytest.approx(3013 / 8),
        pytest.approx(1915 / 8),
    )
