"""Migration collectors 0018: a roll-up row written before it cannot tell a counted 0 from an
engine without a preemption counter, so its 0 becomes NULL ("not known") unless its service is
served by vLLM, which always counts; a count above 0 was counted, over all of the row's
finished requests."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support import migrate, old_service

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("latest_schema_restored"),
]

BEFORE = [("collectors", "0017_rollups_prompt_token_requests")]
AFTER = [("collectors", "0018_preemptions_not_counted_is_null")]
START = datetime(2026, 3, 2, 9, tzinfo=UTC)


def _rows(old, preempted: float, engine: str = "tgi") -> tuple[int, int]:
    service = old_service(old, engine=engine)
    host = old.get_model("collectors", "Host").objects.create(name="a")
    per_host = old.get_model("collectors", "ServiceRollup").objects.create(
        service=service, host=host, resolution_s=60, start=START, scraped_requests=40.0,
        scraped_errors=1.0, scraped_aborts=2.0, scraped_preemptions=preempted,
    )  # fmt: skip
    merged = old.get_model("collectors", "ServiceMergedRollup").objects.create(
        service=service, resolution_s=60, start=START, finished=43.0, preempted=preempted
    )
    return per_host.pk, merged.pk


def _after(per_host: int, merged: int) -> tuple[tuple, tuple]:
    new = migrate(AFTER)
    a = new.get_model("collectors", "ServiceRollup").objects.get(pk=per_host)
    b = new.get_model("collectors", "ServiceMergedRollup").objects.get(pk=merged)
    return (
        (a.scraped_preemptions, a.scraped_finished_counting_preemptions),
        (b.preempted, b.finished_counting_preemptions),
    )


def test_a_zero_written_before_the_upgrade_reads_as_not_known():
    assert _after(*_rows(migrate(BEFORE), 0.0)) == ((None, None), (None, None))


def test_a_count_written_before_the_upgrade_is_over_all_of_its_rows_requests():
    assert _after(*_rows(migrate(BEFORE), 3.0)) == ((3.0, 43.0), (3.0, 43.0))


def test_a_zero_of_a_vllm_service_stays_a_counted_zero():
    assert _after(*_rows(migrate(BEFORE), 0.0, "vllm")) == ((0.0, 43.0), (0.0, 43.0))
