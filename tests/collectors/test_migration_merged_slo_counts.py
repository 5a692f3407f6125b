"""Migration collectors 0015 fills the SLO counts of service-merged rows written before it
from their hosts' rows, so an upgraded database reads the same SLO standing."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from tests.support import migrate, old_service

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("latest_schema_restored"),
]

BEFORE = [("collectors", "0014_raw_keys_checked_per_batch")]
AFTER = [("collectors", "0015_merged_rows_carry_slo_counts")]
START = datetime(2026, 3, 2, 9, tzinfo=UTC)


def test_merged_rows_written_before_the_upgrade_get_their_hosts_counts():
    old = migrate(BEFORE)
    service = old_service(old)
    Host = old.get_model("collectors", "Host")
    a, b = Host.objects.create(name="a"), Host.objects.create(name="b")
    per_host = old.get_model("collectors", "ServiceRollup")
    key = "ttft<=500"
    for host, good, extra in ((a, [90, 80], {}), (b, [10, 9], {"e2e<=2000": [10, 10]})):
        per_host.objects.create(
            service=service, host=host, resolution_s=60, start=START, requests=good[0],
            errors=2, scraped_requests=5.0, scraped_errors=1.0, slo_good={key: good, **extra},
        )  # fmt: skip
    merged = old.get_model("collectors", "ServiceMergedRollup").objects.create(
        service=service, resolution_s=60, start=START, requests=100
    )

    new = migrate(AFTER)
    row = new.get_model("collectors", "ServiceMergedRollup").objects.get(pk=merged.pk)
    assert (row.pushed_errors, row.scraped_requests, row.scraped_errors) == (4, 10.0, 2.0)
    # A key one pushing host did not keep is left out: the period's count of it is partial.
    assert row.slo_good == {key: [100, 89]}
