"""The minutes a batch touches (each queued for its roll-up), found cheaply when it is short."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from collectors.services.ingest import epoch_minute, touched_minutes

T0 = datetime(2026, 12, 2, 13, 59, 50, tzinfo=UTC)


def test_a_batch_across_a_minute_boundary_touches_both_minutes():
    stamps = [T0, T0 + timedelta(seconds=15)]
    assert touched_minutes(stamps) == {epoch_minute(T0), epoch_minute(T0) + 1}


def test_a_gap_of_minutes_with_no_sample_is_not_touched():
    stamps = [T0, T0 + timedelta(minutes=5)]
    assert touched_minutes(stamps) == {epoch_minute(T0), epoch_minute(T0) + 5}


def test_no_samples_touch_no_minute():
    assert touched_minutes([]) == set()


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=50))
def test_it_is_every_minute_a_sample_falls_in(offsets_s):
    stamps = [T0 + timedelta(seconds=s, microseconds=7) for s in offsets_s]
    assert touched_minutes(stamps) == {epoch_minute(ts) for ts in stamps}
