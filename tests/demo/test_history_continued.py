"""`run_demo` continues the seeded history to the minute its live agents start at, so the demo
has no hole between the two: the short SLO windows and the last minutes read data at once."""

import random
from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum

from alerts.evaluation import evaluate_all
from alerts.models import Rule
from alerts.services import ensure_default_rules
from collectors.models import MINUTE, Host, ServiceMergedRollup
from demo.history import _store_span, continue_service, continue_to_next_minute
from tests.factories.catalog import make_baseline, make_service

pytestmark = pytest.mark.django_db

SEEDED = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)  # when `seed_demo` ran
LIVE = SEEDED + timedelta(minutes=14)  # when `run_demo` starts its agents


@pytest.fixture
def svc(team):
    service = make_service(team, "history-svc")
    make_baseline(service, qps=2.0, prompt_tokens_mean=500, output_tokens_mean=200, gpu_util=0.8)
    # The seed's last 20 minutes, written as `backfill_service` writes its minutes (a whole
    # seeded day would make each test take half a minute).
    host = Host.objects.create(name="demo-gpu-01")
    rng = random.Random(1)
    _store_span(service, service.baselines.get(), host, MINUTE, SEEDED - timedelta(minutes=20),
                SEEDED, rng, rng)  # fmt: skip
    return service


def carry_on(svc, until=LIVE):
    return continue_service(service=svc, baseline=svc.baselines.get(), host_name="demo-gpu-01",
                            until=until)  # fmt: skip


def minutes(svc, start, end) -> list[datetime]:
    return list(
        ServiceMergedRollup.objects.filter(
            service=svc, resolution_s=MINUTE, start__gte=start, start__lt=end
        )
        .order_by("start")
        .values_list("start", flat=True)
    )


def test_every_minute_from_the_seed_to_the_live_start_has_its_row(svc):
    carry_on(svc)
    expected = [SEEDED + timedelta(minutes=m) for m in range(14)]
    assert minutes(svc, SEEDED - timedelta(minutes=1), LIVE + timedelta(minutes=5)) == [
        SEEDED - timedelta(minutes=1),
        *expected,
    ]


def test_the_outage_burn_pair_reads_data_when_the_live_agents_start(svc):
    ensure_default_rules(svc)
    carry_on(svc)
    evaluate_all(now=LIVE)
    outage = Rule.objects.get(service=svc, kind="slo_burn", window_s=600)
    assert outage.health == "ok", outage.health_reason


def test_continuing_twice_to_the_same_minute_stores_no_more_requests(svc):
    carry_on(svc)
    once = ServiceMergedRollup.objects.filter(service=svc).aggregate(n=Sum("requests"))["n"]
    assert carry_on(svc) == 0
    twice = ServiceMergedRollup.objects.filter(service=svc).aggregate(n=Sum("requests"))["n"]
    assert twice == once


def test_a_hole_longer_than_an_hour_is_filled_for_its_last_hour_only(svc):
    # A demo resumed days later starts in seconds: the older part of the hole stays.
    later = SEEDED + timedelta(days=2)
    assert carry_on(svc, until=later) == 60
    assert minutes(svc, SEEDED, later)[0] == later - timedelta(hours=1)


def test_a_service_without_seeded_history_gets_none(team):
    # `seed_demo --history-days 0` asked for none: the live agents alone fill it.
    service = make_service(team, "no-history")
    make_baseline(service, qps=2.0)
    assert continue_service(service=service, baseline=service.baselines.get(),
                            host_name="demo-gpu-01", until=LIVE) is None  # fmt: skip
    assert not ServiceMergedRollup.objects.filter(service=service).exists()


class _Clock:
    """Each call moves on by `step` (the writing takes that long)."""

    def __init__(self, now: datetime, step: timedelta) -> None:
        self.now, self.step = now, step

    def __call__(self) -> datetime:
        now, self.now = self.now, self.now + self.step
        return now


def test_live_traffic_starts_on_the_next_minute_boundary(svc):
    clock = _Clock(LIVE + timedelta(seconds=20), timedelta(seconds=1))
    assert continue_to_next_minute([svc], clock=clock) == LIVE + timedelta(minutes=1)


def test_writing_past_the_boundary_continues_to_the_next_one(svc):
    clock = _Clock(LIVE + timedelta(seconds=50), timedelta(seconds=15))
    live_from = continue_to_next_minute([svc], clock=clock)
    assert live_from == LIVE + timedelta(minutes=2)
    assert minutes(svc, LIVE, live_from + timedelta(minutes=1))[-1] == LIVE + timedelta(minutes=1)
