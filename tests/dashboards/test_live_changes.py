"""Change points over live traffic: a lasting step in a service's daily latency shows on its
timeline, on the day it began; the day's own load curve does not."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta

import pytest

from collectors.models import HOUR, Host, ServiceRollup
from collectors.services.rollups import rebuild_derived_rollups
from dashboards.live_changes import live_changes
from dashboards.timeline import timeline
from tests.factories.traffic import service_row, spread

pytestmark = pytest.mark.django_db

# 20 whole days ending yesterday (the timeline reads up to now; today is never whole)
TODAY = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
FIRST_DAY = TODAY - timedelta(days=20)
NOW = TODAY + timedelta(hours=12)


def seed_days(service, *, e2e_ms, days: int = 20, requests: int = 60) -> None:
    """Hourly roll-ups of one host for `days` days; `e2e_ms(day, hour)` is the hour's base
    (its P99 is 1.49 x base), with a little day-to-day wobble as live traffic has."""
    host, _ = Host.objects.get_or_create(name="gpu-host-1")
    rows = []
    for day in range(days):
        wobble = 1 + 0.02 * math.sin(day * 1.7)
        for hour in range(24):
            base = e2e_ms(day, hour) * wobble
            values = {"e2e": spread(base, requests), "ttft": spread(base / 5, requests),
                      "tpot": spread(20.0, requests)}  # fmt: skip
            start = FIRST_DAY + timedelta(days=day, hours=hour)
            rows.append(service_row(service, host, HOUR, start, values, 60, 0.5, 2000.0))
    ServiceRollup.objects.bulk_create(rows, batch_size=500)
    rebuild_derived_rollups(
        start=FIRST_DAY, end=FIRST_DAY + timedelta(days=days), host_ids=[host.pk]
    )


def test_a_lasting_slowdown_is_a_live_step_on_the_day_it_began(service):
    seed_days(service, e2e_ms=lambda day, hour: 1000.0 if day < 12 else 1400.0)
    changes = {c.label: c for c in live_changes(service=service, now=NOW)}
    p99 = changes["E2E P99"]
    assert p99.day == (FIRST_DAY + timedelta(days=12)).date()
    assert p99.relative == pytest.approx(0.4, abs=0.05)
    assert p99.before == pytest.approx(1490, rel=0.05)
    assert "TPOT P50" not in changes  # TPOT did not move


def test_the_days_load_curve_is_not_a_step(service):
    # every evening twice as slow as the morning, every day alike
    seed_days(service, e2e_ms=lambda day, hour: 1000.0 * (1.5 + 0.5 * math.sin(hour / 3.8)))
    assert live_changes(service=service, now=NOW) == []


def test_the_dossier_timeline_shows_the_live_step_with_a_link_to_its_days(service):
    seed_days(service, e2e_ms=lambda day, hour: 1000.0 if day < 12 else 1400.0)
    markers = [m for m in timeline(service=service) if m.title.startswith("Live E2E P99")]
    assert len(markers) == 1
    step = FIRST_DAY + timedelta(days=12)
    assert markers[0].title == f"Live E2E P99 stepped +40% on {step:%Y-%m-%d} (UTC)"
    assert markers[0].tone == "bad"
    week_before, week_after = step - timedelta(days=7), step + timedelta(days=7)
    assert (
        f"start={week_before:%Y-%m-%d}T00%3A00Z&end={week_after:%Y-%m-%d}T00%3A00Z"
        in markers[0].url
    )
