"""Compliance from roll-ups against the exact per-request figure on a small test fleet: every
request stored raw, rolled up by collectors, then counted from the roll-ups' sketches."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest

from alerts import slo as slo_reads
from analysis import slo
from collectors import storage
from collectors.models import Host, RequestSample
from collectors.services.ingest import REQUEST_FIELDS, epoch_minute
from collectors.services.rollups import merge_services, rollup_host_minutes
from dossiers.models import Slo
from tests.factories.alerts import LAG, minute

pytestmark = pytest.mark.django_db

MINUTES, PER_MINUTE = 20, 150


def push(service, host, rng, *, slow_share: float) -> list[dict]:
    """Requests whose TTFT and TPOT are correlated (a slow request is often slow in both)."""
    kept = []
    for i in range(MINUTES):
        rows = []
        for k in range(PER_MINUTE):
            slow = rng.random() < slow_share
            load = rng.lognormvariate(0.0, 0.25) * (2.2 if slow else 1.0)
            ttft = 280.0 * load * rng.lognormvariate(0.0, 0.15)
            tpot = 30.0 * load * rng.lognormvariate(0.0, 0.15)
            ts = minute(i) + timedelta(seconds=k * 59.0 / PER_MINUTE)
            rows.append((service.pk, host.pk, ts, ttft, tpot, ttft + 200 * tpot, 1.0, 500,
                         200, True))  # fmt: skip
            kept.append({"ttft": ttft, "tpot": tpot})
        storage.bulk_insert(RequestSample, REQUEST_FIELDS, rows)
        rollup_host_minutes(host_id=host.pk, minutes=[epoch_minute(minute(i))])
    return kept


def standing(service):
    [reading] = slo_reads.standings([service], now=minute(MINUTES) + LAG)[service.pk].readings
    return reading


@pytest.mark.parametrize("slow_share", [0.002, 0.01, 0.05])
def test_compliance_from_rollups_is_the_exact_per_request_figure(make_services, slow_share):
    [service] = make_services(1)
    host = Host.objects.create(name=f"node-{service.pk}")
    objective = Slo.objects.create(service=service, name="Interactive", ttft_ms=500, tpot_ms=50)
    requests = push(service, host, random.Random(21), slow_share=slow_share)
    exact = slo.good_per_request(requests, objective.thresholds_ms).good_low / len(requests)

    reading = standing(service)
    assert reading.exact and reading.count.total == len(requests)
    assert reading.budget.compliance == pytest.approx((exact, exact))


def test_minutes_rolled_up_before_the_slo_existed_give_bounds_around_the_exact_figure(
    make_services,
):
    [service] = make_services(1)
    host = Host.objects.create(name=f"node-{service.pk}")
    # Rolled up while the service had only its P99 fields (another key): no joint count.
    requests = push(service, host, random.Random(5), slow_share=0.002)
    objective = Slo.objects.create(service=service, name="Interactive", ttft_ms=500, tpot_ms=50)
    exact = slo.good_per_request(requests, objective.thresholds_ms).good_low / len(requests)

    reading = standing(service)
    low, high = reading.budget.compliance
    assert not reading.exact
    assert low <= exact <= high
    assert any("bounded" in n for n in reading.notes)


def test_a_host_that_counted_without_the_slo_makes_its_minutes_bounded_not_exact(make_services):
    """Two hosts serve the same minutes; one was rolled up before the SLO existed. The
    merged minutes hold only part of the joint count, so the reading is bounded."""
    [service] = make_services(1)
    early, late = (Host.objects.create(name=f"node-{service.pk}-{n}") for n in "ab")
    requests = push(service, early, random.Random(5), slow_share=0.01)
    objective = Slo.objects.create(service=service, name="Interactive", ttft_ms=500, tpot_ms=50)
    requests += push(service, late, random.Random(6), slow_share=0.01)
    exact = slo.good_per_request(requests, objective.thresholds_ms).good_low / len(requests)

    reading = standing(service)
    low, high = reading.budget.compliance
    assert not reading.exact and reading.count.total == len(requests)
    assert low <= exact <= high


def test_availability_without_pushed_requests_is_counted_from_the_engine_counters(make_services):
    """A service whose agents only scrape its engine: 990 requests finished well and 10 with
    an error over the window is 99% available, read from the engine's counters."""
    from collectors.models import ServiceRollup

    [service] = make_services(1)
    host = Host.objects.create(name=f"node-{service.pk}")
    Slo.objects.filter(service=service).delete()
    Slo.objects.create(service=service, name="Up", kind=Slo.Kind.AVAILABILITY, target_percent=99.5)
    for i in range(10):
        ServiceRollup.objects.create(
            service=service,
            host=host,
            resolution_s=60,
            start=minute(MINUTES - 10 + i),
            scraped_requests=99,
            scraped_errors=1,
            scraped_seconds=60,
        )
    # The service-merged rows the roll-up writes beside them (SLO counts read those).
    merge_services([service.pk], 60, [minute(MINUTES - 10 + i) for i in range(10)])
    reading = next(
        r
        for r in slo_reads.standings([service], now=minute(MINUTES) + LAG)[service.pk].readings
        if r.slo.kind == Slo.Kind.AVAILABILITY
    )
    assert (reading.count.total, reading.count.good_low) == (1000, 990)
    assert reading.source.startswith("engine counters")
