"""TGI 3.3.7's router, scrapes written here from its source (tests/fixtures/real/metrics,
SOURCES.md), pushed through the ingest API and rolled up: what the claims check then says."""

from __future__ import annotations

import pytest

from tests.factories.batches import claims_after_push, push_capture_pair

pytestmark = pytest.mark.django_db

# After one success, then: 6 successes (one best_of=3), 2 streams dropped, 1 failed generation,
# 1 refused by validation, 1 at the concurrency limit. Between the two scrapes the prompt
# histogram gained 11 observations and 2,000 tokens, the output one 6 and 426 (SOURCES.md).
FAILURES = (
    "written-here-tgi-3.3.7-failures-best-of-before.prom",
    "written-here-tgi-3.3.7-failures-best-of.prom",
)


def test_live_prompt_tokens_per_request_are_over_the_prompts_tgi_observed(
    agent_client, service, fixtures_dir
):
    push_capture_pair(agent_client, service, fixtures_dir, FAILURES, source="tgi")
    check = claims_after_push(service)
    # Over the 6 successes instead, 333.3 prompt tokens: the prompts of the dropped, failed and
    # extra best_of sequences counted without them (the successes' own prompts: 163.3).
    assert (check.live_workload.prompt_tokens, check.live_workload.output_tokens) == (
        pytest.approx(2000 / 11),
        pytest.approx(426 / 6),
    )
