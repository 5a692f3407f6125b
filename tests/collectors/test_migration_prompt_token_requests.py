"""Migration collectors 0017 gives roll-up rows written before it a prompt-token count: their
per-request token histograms' shared count (vLLM's, Triton's), so claims read them as before."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support import migrate, old_service

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("latest_schema_restored"),
]

BEFORE = [("collectors", "0016_rollups_request_tokens_preemptions")]
AFTER = [("collectors", "0017_rollups_prompt_token_requests")]
START = datetime(2026, 3, 2, 9, tzinfo=UTC)


def test_rows_written_before_count_their_prompt_tokens_over_their_shared_count():
    old = migrate(BEFORE)
    service = old_service(old)
    Host = old.get_model("collectors", "Host")
    rollup = old.get_model("collectors", "ServiceRollup")
    # vLLM's histograms (63 requests, 7,988 prompt tokens), and an engine without them.
    vllm = rollup.objects.create(
        service=service, host=Host.objects.create(name="a"), resolution_s=60, start=START,
        scraped_token_requests=63.0, scraped_request_prompt_tokens=7988.0,
    )  # fmt: skip
    other = rollup.objects.create(
        service=service, host=Host.objects.create(name="b"), resolution_s=60, start=START,
        scraped_requests=5.0, scraped_prompt_tokens=500.0,
    )  # fmt: skip

    new = migrate(AFTER)
    rows = new.get_model("collectors", "ServiceRollup").objects
    assert rows.get(pk=vllm.pk).scraped_prompt_token_requests == 63.0
    assert rows.get(pk=other.pk).scraped_prompt_token_requests == 0.0
