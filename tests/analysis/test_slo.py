"""SLO arithmetic: counts with bounds, joint objectives, budget, burn rate, multi-window pairs."""

import random

import pytest

from analysis import sketches, slo
from analysis.buckets import BucketCounts

EDGES = (0.1, 0.25, 0.5, 1.0)


def test_threshold_on_a_bucket_edge_is_exact():
    bc = BucketCounts(EDGES, (10, 20, 30, 5, 1))
    c = slo.good_from_buckets(bc, 0.25)
    assert (c.good_low, c.good_high, c.total) == (30, 30, 66)


def test_threshold_between_edges_gives_the_bucket_as_bounds():
    bc = BucketCounts(EDGES, (10, 20, 30, 5, 1))
    c = slo.good_from_buckets(bc, 0.3)  # inside (0.25, 0.5]: its 30 requests are unknown
    assert (c.good_low, c.good_high) == (30, 60)
    assert not c.exact


def test_threshold_above_the_last_edge_leaves_only_inf_unknown():
    bc = BucketCounts(EDGES, (10, 20, 30, 5, 1))
    c = slo.good_from_buckets(bc, 2.0)
    assert (c.good_low, c.good_high) == (65, 66)


def test_sketch_count_brackets_the_exact_count():
    rng = random.Random(7)
    values = [rng.lognormvariate(5.5, 0.6) for _ in range(20_000)]
    sk = sketches.from_values(values)
    exact = sum(v <= 300.0 for v in values)
    c = slo.good_from_sketch(sk, 300.0)
    assert c.good_low <= exact <= c.good_high
    assert (c.good_high - c.good_low) / c.total < 0.02  # one bin wide (1% relative accuracy)


def test_sketch_min_and_max_settle_the_count():
    sk = sketches.from_values([100.0, 200.0])
    assert slo.good_from_sketch(sk, 200.0).exact
    assert slo.good_from_sketch(sk, 99.0).good_high == 0


def test_per_request_joint_count_needs_every_objective():
    reqs = [
        {"ttft": 100, "tpot": 10},
        {"ttft": 600, "tpot": 10},  # bad TTFT
        {"ttft": 100, "tpot": 60},  # bad TPOT
        {"ttft": 600, "tpot": 60},  # bad both: one bad request, not two
    ]
    c = slo.good_per_request(reqs, {"ttft": 500, "tpot": 50})
    assert (c.good_low, c.total) == (1, 4) and c.exact


def test_joint_from_separate_counts_is_bounded_by_frechet():
    ttft = slo.Count(100, 90, 90)  # 10% bad
    tpot = slo.Count(100, 95, 95)  # 5% bad
    j = slo.joint([ttft, tpot])
    assert (j.bad_share_low, j.bad_share_high) == pytest.approx((0.10, 0.15))


def test_budget_burn_rate_and_budget_left():
    b = slo.Budget(0.99, slo.Count(10_000, 9_950, 9_950))  # 0.5% bad against 1% allowed
    assert b.burn_rate == pytest.approx((0.5, 0.5))
    assert b.budget_left == pytest.approx((0.5, 0.5))
    assert b.met is True


def test_budget_unknown_when_bounds_straddle_the_target():
    b = slo.Budget(0.99, slo.Count(1000, 985, 995))
    assert b.met is None


def test_target_must_be_a_fraction():
    with pytest.raises(ValueError, match="target"):
        slo.Budget(99, slo.NONE)


FAST = slo.WORKBOOK_PAIRS[0]


def _minutes(bad_share: float, n: int, per_min: float = 100.0):
    return [per_min * (1 - bad_share)] * n, [per_min] * n


def test_total_outage_on_a_999_target_fires_the_fast_pair_within_a_minute():
    good, total = _minutes(0.0, 120)
    og, ot = _minutes(1.0, 30)
    fired = slo.replay(good + og, total + ot, target=0.999, pair=FAST)
    assert fired and fired[0] - 120 <= 1


def test_steady_14x_burn_waits_for_the_long_window():
    target = 0.99
    good, total = _minutes(0.0, 180)
    bg, bt = _minutes(0.145, 120)  # 14.5x
    fired = slo.replay(good + bg, total + bt, target=target, pair=FAST)
    assert len(fired) == 1
    # 14.5x needs 14.4/14.5 of the hour before the hour's mean exceeds 14.4x.
    assert fired[0] - 180 == pytest.approx(60 * 14.4 / 14.5, abs=1)


def test_short_window_must_agree_before_paging():
    # A burst that ended: the hour still burns fast, the last 5 minutes do not.
    good, total = _minutes(0.0, 60)
    bg, bt = _minutes(1.0, 20)
    cg, ct = _minutes(0.0, 10)
    series_g, series_t = good + bg + cg, total + bt + ct
    fired = slo.replay(series_g, series_t, target=0.99, pair=FAST)
    assert len(fired) == 1 and fired[0] < 80  # fired during the burst, not after it


def test_steady_1x_burn_never_pages():
    good, total = _minutes(0.01, 3 * 1440)
    for pair in slo.WORKBOOK_PAIRS[:2]:
        assert slo.replay(good, total, target=0.99, pair=pair) == []


def test_a_steady_burn_at_exactly_the_factor_pages_once_the_long_window_is_full():
    good, total = _minutes(0.0, 180)
    bg, bt = _minutes(0.144, 120)  # 14.4x at 99%
    fired = slo.replay(good + bg, total + bt, target=0.99, pair=FAST)
    assert fired == [180 + 59]  # the 60th minute of burn: the hour is all burn


def _noisy_month(rng, *, bad_share: float, per_min: int):
    """30 days of per-minute counts with binomial noise around a steady bad share."""
    total = [per_min] * (30 * 1440)
    bad = rng.binomial(per_min, bad_share, size=len(total))
    return [t - b for t, b in zip(total, bad, strict=True)], total


@pytest.mark.parametrize("per_min", [60, 1200])  # 1 and 20 requests a second
def test_thirty_days_of_in_budget_traffic_page_zero_times(per_min):
    import numpy as np

    rng = np.random.default_rng(21)
    good, total = _noisy_month(rng, bad_share=0.005, per_min=per_min)  # half the budget
    pages = [p for pair in slo.DEFAULT_PAIRS for p in slo.replay(good, total, target=0.99,
                                                                   pair=pair)]  # fmt: skip
    assert pages == []


def test_a_total_outage_at_a_99_target_fires_the_outage_pair_in_two_minutes():
    good, total = _minutes(0.0, 120)
    og, ot = _minutes(1.0, 30)
    fired = slo.replay(good + og, total + ot, target=0.99, pair=slo.OUTAGE_PAIR)
    assert fired == [121]  # the second minute of outage: 2 of 10 minutes bad, 20x
