"""Triton with the TensorRT-LLM backend, scrapes written here from the backend 0.19's own source
(tests/fixtures/real/metrics, SOURCES.md), pushed through the ingest API and rolled up: what the
claims check then says."""

from __future__ import annotations

import pytest

from tests.factories.batches import claims_after_push, push_capture_pair

pytestmark = pytest.mark.django_db

# The freshly loaded model, then 8 requests later: 7 succeeded, 1 failed in the executor; the
# backend's histograms hold all 8 (3,013 input and 1,915 output tokens).
TOKENS = (
    "written-here-triton-trtllm-0.19-token-histograms-before.prom",
    "written-here-triton-trtllm-0.19-token-histograms.prom",
)


def test_live_tokens_per_request_are_the_backends_over_the_requests_it_observed(
    agent_client, service, fixtures_dir
):
    push_capture_pair(agent_client, service, fixtures_dir, TOKENS, source="triton")
    check = claims_after_push(service)
    # Over Triton's 7 successes instead, 430.4 and 273.6: the failed request's prompt counted
    # without the request.
    assert (check.live_workload.prompt_tokens, check.live_workload.output_tokens) == (
        pytest.approx(3013 / 8),
        pytest.approx(1915 / 8),
    )
