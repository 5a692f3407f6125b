"""A claim against its live figure: holds, drifted, or why it cannot be judged."""

from datetime import UTC, datetime, timedelta

import pytest

from analysis import claims
from analysis.claims import Status, comparable_load, is_stale, judge, judge_intervals, worst


def test_a_live_p99_within_fifteen_percent_holds():
    assert judge(1000.0, 1120.0).status == Status.HOLDS


def test_a_live_p99_twice_the_claim_has_drifted_by_plus_100_percent():
    verdict = judge(1000.0, 2000.0)
    assert (verdict.status, verdict.change_display) == (Status.DRIFTED, "+100%")


def test_a_margin_drifts_by_points_not_by_ratio():
    verdict = judge(-0.075, -0.5, relative=False)
    assert (verdict.status, verdict.change_display) == (Status.DRIFTED, "-42 pts")


def test_no_live_figure_is_no_live_data_and_no_baseline_figure_is_no_claim():
    assert (judge(1.0, None).status, judge(None, 1.0).status) == (
        Status.NO_LIVE_DATA,
        Status.NO_CLAIM,
    )


def test_load_within_a_quarter_of_the_baseline_rate_is_comparable():
    assert (comparable_load(8.0, 9.5), comparable_load(8.0, 11.0)) == (True, False)


def test_load_is_unknown_without_a_baseline_rate():
    assert comparable_load(None, 3.0) is None


def test_a_baseline_older_than_the_limit_is_stale():
    now = datetime(2026, 12, 1, tzinfo=UTC)
    assert is_stale(now - timedelta(days=91), now, timedelta(days=90))


def test_a_service_shows_its_worst_claim():
    assert worst([Status.HOLDS, Status.DRIFTED, Status.NO_LIVE_DATA]) == Status.DRIFTED


def test_figures_without_live_data_do_not_hide_the_ones_that_hold():
    assert worst([Status.HOLDS, Status.NO_LIVE_DATA]) == Status.HOLDS


def test_a_service_with_no_live_figure_at_all_shows_no_live_data():
    assert worst([Status.NO_LIVE_DATA, Status.NO_LIVE_DATA]) == Status.NO_LIVE_DATA


def test_two_buckets_that_meet_within_the_tolerance_hold():
    assert judge_intervals(0.0, 300.0, 0.0, 300.0).status == Status.HOLDS


def test_a_live_bucket_wholly_above_the_baseline_bucket_drifts_by_the_nearest_ends():
    verdict = judge_intervals(0.0, 300.0, 500.0, 800.0)
    assert verdict.status == Status.DRIFTED
    assert verdict.change == pytest.approx(500.0 / 300.0 - 1.0)


def test_a_workload_within_every_band_is_equal():
    then = claims.Workload(rate=2.0, prompt_tokens=900.0, output_tokens=128.0)
    now = claims.Workload(rate=2.1, prompt_tokens=950.0, output_tokens=120.0)
    assert claims.compare_workload(then, now, {"rate": 0.1, "output_tokens": 0.1}).equal


def test_longer_answers_alone_are_a_changed_workload_named_with_the_change():
    then = claims.Workload(rate=2.0, prompt_tokens=900.0, output_tokens=100.0)
    now = claims.Workload(rate=2.0, prompt_tokens=900.0, output_tokens=127.0)
    bands = dict.fromkeys(("rate", "prompt_tokens", "output_tokens"), 0.07)
    match = claims.compare_workload(then, now, bands)
    assert match.note == "workload changed: output tokens per request +27%"


def test_a_field_the_baseline_does_not_record_is_unknown_not_equal():
    then = claims.Workload(rate=2.0, prompt_tokens=None, output_tokens=100.0)
    now = claims.Workload(rate=2.0, prompt_tokens=900.0, output_tokens=100.0)
    match = claims.compare_workload(then, now, {"rate": 0.07, "prompt_tokens": 0.07})
    assert (match.equal, match.unknown) == (False, ("prompt_tokens",))


def test_the_resource_band_cannot_carry_a_figure_past_the_tolerance_by_workload_alone():
    # Rate and tokens per request both at the edge of their band, in the same direction.
    assert (1 + claims.RESOURCE_BAND) ** 2 - 1 < claims.RELATIVE_TOLERANCE
