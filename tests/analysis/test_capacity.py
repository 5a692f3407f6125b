"""analysis.capacity: curves across a sweep, the highest load meeting a limit, intervals."""

import itertools
import math
from statistics import NormalDist

import pytest
from hypothesis import given
from hypothesis import strategies as st

from analysis import capacity
from analysis.capacity import BELOW, BEYOND, WITHIN, Point
from analysis.capacity.curves import _fit_linear_family


def queue_points(xs, count=1000, a=100.0, b=400.0, k=2.0, x_scale=64.0):
    return [Point(x, a + b * (x / x_scale) ** k, count) for x in xs]


XS = [1, 2, 4, 8, 16, 32, 64]


def test_the_highest_load_meeting_the_limit_is_where_a_clean_curve_reaches_it():
    curve = capacity.fit_curve(queue_points(XS), 0.99)
    found = capacity.crossing(curve, 200.0)  # 100 + 400 (x/64)^2 = 200 at x = 32
    assert found.status == WITHIN
    assert found.load.value == pytest.approx(32, rel=0.02)


def test_the_fit_never_falls_with_load_even_when_a_point_dips():
    points = queue_points(XS)
    points[4] = Point(16, 60.0, 1000)  # a noisy dip below the unloaded latency
    curve = capacity.fit_curve(points, 0.99)
    values = [curve.predict(x) for x in range(1, 65)]
    assert all(later >= earlier for earlier, later in itertools.pairwise(values))


def test_a_limit_held_at_the_last_measured_load_is_not_extrapolated():
    curve = capacity.fit_curve(queue_points(XS), 0.99)
    result = capacity.max_load({"ttft_p99_ms": (curve, 10_000.0)})
    assert result.status == BEYOND and result.load.value == 64 and result.load.high == 64
    assert "measure beyond 64" in result.message


def test_a_limit_broken_at_the_lowest_load_gives_no_number():
    curve = capacity.fit_curve(queue_points(XS), 0.99)
    result = capacity.max_load({"ttft_p99_ms": (curve, 50.0)})
    assert result.status == BELOW and result.load is None
    assert "lowest measured load" in result.message


def test_the_objective_crossed_first_binds():
    ttft = capacity.fit_curve(queue_points(XS), 0.99)
    tpot = capacity.fit_curve(queue_points(XS, a=10, b=40), 0.99)
    result = capacity.max_load({"ttft_p99_ms": (ttft, 400.0), "tpot_p99_ms": (tpot, 20.0)})
    assert result.limited_by == "tpot_p99_ms"  # 20 ms is reached at x = 32, 400 ms at 55


def test_the_interval_holds_the_value_and_states_its_level():
    curve = capacity.fit_curve(queue_points(XS, count=50), 0.99)
    load = capacity.crossing(curve, 200.0).load
    assert load.low < load.value < load.high and load.level == 0.8


def test_fewer_requests_per_point_widen_the_interval():
    many = capacity.crossing(capacity.fit_curve(queue_points(XS, count=5000), 0.99), 300.0)
    few = capacity.crossing(capacity.fit_curve(queue_points(XS, count=20), 0.99), 300.0)
    assert few.load.high - few.load.low > many.load.high - many.load.low


def test_a_percentile_over_few_requests_pulls_the_fit_less():
    points = queue_points(XS)
    outlier = Point(16, 400.0, 10)  # the true value is 125 ms; this P99 rests on 10 requests
    curve = capacity.fit_curve([*points[:4], outlier, *points[5:]], 0.99)
    assert curve.predict(16) < 200


def test_repeated_runs_at_one_load_count_as_one_point_with_their_spread():
    points = [*queue_points(XS), Point(16, 150.0, 1000)]
    curve = capacity.fit_curve(points, 0.99)
    assert len(curve.points) == len(XS)
    assert curve.log_se[4] > curve.log_se[3]


def test_a_bad_point_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"points\[1\]\.value_ms"):
        capacity.fit_curve([Point(1, 10.0), Point(2, -1.0)], 0.99)


def test_loglog_interpolation_between_neighbours():
    # 100 ms at 10, 400 ms at 40: a straight line of slope 1 in log-log reaches 200 at 20.
    assert capacity.loglog_between(10, 100, 40, 400, 200) == pytest.approx(20)


def test_throughput_interpolation_ignores_a_dip():
    assert capacity.monotone_interpolate([1, 2, 4], [10, 8, 20], 2) >= 8.9


def test_a_setting_is_given_as_the_rate_measured_there():
    # 2 req/s at concurrency 8, 4 req/s at 32: log-log halfway (16) is 2.83 req/s.
    rate = capacity.rate_at([8, 32], [2.0, 4.0], capacity.Estimate(16, 12, 20))
    assert rate.value == pytest.approx(2 * math.sqrt(2))


def test_where_throughput_is_flat_the_rate_keeps_its_own_noise():
    # Saturated: every setting in the interval serves 5 req/s, yet a new run measures 5 +- noise.
    rate = capacity.rate_at([50, 100, 200], [5.0, 5.0, 5.0], capacity.Estimate(100, 80, 150))
    assert rate.low < 5.0 * 0.95 and rate.high > 5.0 * 1.05


def test_standard_error_of_a_p99_over_many_requests_is_the_large_sample_one():
    # sqrt(q (1 - q) / n) / phi(z_q) x sigma, with n = 3,200 and sigma = 0.5.
    large_sample = math.sqrt(0.99 * 0.01 / 3200) / NormalDist().pdf(NormalDist().inv_cdf(0.99))
    se = capacity.percentile_log_se(0.99, 3200, 0.5)
    assert se == pytest.approx(large_sample * 0.5, rel=0.05)


def test_a_p99_over_ten_requests_is_as_noisy_as_their_maximum():
    # The maximum of 10 standard normals has sd 0.587; the large-sample formula says 1.18.
    assert capacity.percentile_log_se(0.99, 10, 1.0) == pytest.approx(0.587, abs=0.01)


def test_the_spread_of_a_run_is_read_at_where_its_p99_over_few_requests_sits():
    # Over 10 requests the "P99" is the maximum, on average 1.54 sigma above the median (the
    # median of 10 sits 0.12 below, by the rule's rounding): P99 / P50 = e^1.66 is sigma 1.
    sigma = capacity.log_spread(100.0, 100.0 * math.exp(1.539 + 0.123), 0.99, 10)
    assert sigma == pytest.approx(1.0, abs=0.01)


def test_a_p50_takes_the_spread_of_its_runs_widest_percentile():
    # A TPOT whose P99 is 3% above its P50 over 1,000 requests is a narrow distribution: its
    # P50 is precise, not as noisy as the default spread (0.5) would make it.
    spread = capacity.run_log_spread(20.0, {0.5: 20.0, 0.9: 20.3, 0.99: 20.6}, 1000)
    assert spread == pytest.approx(capacity.log_spread(20.0, 20.6, 0.99, 1000))
    assert spread < 0.02
    tight = capacity.percentile_log_se(0.5, 1000, spread)
    assert tight < capacity.percentile_log_se(0.5, 1000, None) / 20
    # Nothing above the median (one request: P99 = P50): no spread to tell.
    assert capacity.run_log_spread(20.0, {0.5: 20.0, 0.99: 20.0}, 1) is None


def test_objectives_binding_at_the_same_load_are_tied_not_the_lowest_of_both():
    ttft = capacity.fit_curve(queue_points(XS, count=50), 0.99)
    e2e = capacity.fit_curve(queue_points(XS, count=50, a=1000, b=4000), 0.99)
    result = capacity.max_load({"ttft_p99_ms": (ttft, 200.0), "e2e_p99_ms": (e2e, 2000.0)})
    assert "tied with" in result.message
    assert result.load.value == pytest.approx(32, rel=0.05)


def test_a_rate_sweep_near_saturation_is_fitted_by_a_filling_queue():
    # latency = 100 + 20 / (1 - x / 10): the queue shape; the limit 300 ms is reached at 9.
    points = [Point(x, 100 + 20 / (1 - x / 10), 1000) for x in (1, 2, 4, 6, 8, 9.5)]
    curve = capacity.fit_curve([p for p in points if p.x != 9], 0.99)
    assert capacity.crossing(curve, 300.0).load.value == pytest.approx(9, rel=0.03)


def test_tied_objectives_are_fitted_jointly_so_a_flat_curve_does_not_pull_the_load():
    # TTFT rises steeply through its limit at 32; TPOT barely moves across the sweep and, read
    # 3% high, would cross far away: the joint fit stays where the steep curve says.
    ttft = capacity.fit_curve(queue_points(XS, count=200), 0.99)
    flat = capacity.fit_curve([Point(x, 20 + 0.02 * x, 200) for x in XS], 0.99)
    result = capacity.max_load(
        {"ttft_p99_ms": (ttft, 200.0), "tpot_p99_ms": (flat, flat.predict(32) * 1.03)}
    )
    assert result.load.value == pytest.approx(32, rel=0.1)


def test_a_joint_fit_of_consistent_objectives_narrows_the_interval():
    ttft = capacity.fit_curve(queue_points(XS, count=500), 0.99)
    e2e = capacity.fit_curve(queue_points(XS, count=500, a=1000, b=4000), 0.99)
    alone = capacity.joint_load([(ttft, 200.0)])
    both = capacity.joint_load([(ttft, 200.0), (e2e, 2000.0)])
    assert both.value == pytest.approx(32, rel=0.05)
    assert both.high - both.low < alone.high - alone.low


def test_joint_load_names_no_load_for_objectives_without_a_shared_measured_range():
    low = capacity.fit_curve(queue_points([1, 2, 4]), 0.99)
    high = capacity.fit_curve(queue_points([8, 16, 32]), 0.99)
    assert capacity.joint_load([(low, 150.0), (high, 150.0)]) is None


def test_a_nearly_flat_curve_says_the_limit_is_never_reached_rather_than_failing():
    flat = capacity.Curve(
        capacity.LOGLOG2,
        (0.0, 1e-6, 0.0),
        10.0,
        0.99,
        (Point(1, 1.0), Point(10, 1.0)),
        (0.1, 0.1),
        0,
    )
    assert flat.inverse(1e6) == math.inf


def test_a_curve_no_family_follows_is_read_between_its_points():
    # Flat, then a sharp knee: every family bends too early or too late; the points do not.
    values = [100, 101, 102, 103, 104, 400, 1600]
    points = [Point(x, v, 1000) for x, v in zip(XS, values, strict=True)]
    curve = capacity.fit_curve(points, 0.5)
    assert curve.family == capacity.PCHIP
    assert [curve.predict(x) for x in XS] == pytest.approx(values)
    found = capacity.crossing(curve, 200.0)
    assert 16 < found.load.value < 32
    values = [curve.predict(x) for x in range(1, 65)]
    assert all(later >= earlier for earlier, later in itertools.pairwise(values))


def test_a_clean_curve_keeps_its_family():
    assert capacity.fit_curve(queue_points(XS), 0.99).family != capacity.PCHIP


def test_a_limit_within_the_lowest_points_noise_is_not_called_broken_there():
    # A flat curve (a saturated TPOT): 1% under the lowest point is inside its noise.
    points = [Point(x, v, 500) for x, v in ((500, 205.0), (1000, 204.0), (2000, 215.0))]
    found = capacity.crossing(capacity.fit_curve(points, 0.5), 203.0)
    assert found.status != BELOW
    assert found.load.low < 500


def test_between_two_points_the_crossing_is_read_on_the_straight_line_in_log_log():
    curve = capacity.fit_curve([Point(10, 100.0, 1000), Point(40, 400.0, 1000)], 0.99)
    assert capacity.crossing(curve, 200.0).load.value == pytest.approx(20, rel=1e-6)


def test_a_middle_point_the_line_through_its_neighbours_misses_widens_the_interval():
    # Three points and a three-parameter curve through all of them either way: only leaving
    # the middle one out tells how far a crossing read between points can be off.
    def width(middle_ms: float) -> float:
        points = [Point(1, 101.5625, 1000), Point(4, middle_ms, 1000), Point(16, 500.0, 1000)]
        load = capacity.crossing(capacity.fit_curve(points, 0.99), 300.0).load
        return (load.high - load.low) / load.value

    # 125 ms is on 100 + 400 (x / 16)^2, 225 ms on the straight line in log-log through the ends
    assert width(125.0) > 2 * width(225.0)


# --- the closed-form fit of a + b u over many shapes at once (curves._fit_linear_family) -------

FIT_XS = [1.0, 2.0, 4.0, 8.0, 16.0]
FIT_KS = [0.5, 1.0, 2.0, 3.0]


def _power_basis(ks):
    return [((k,), [(x / FIT_XS[-1]) ** k for x in FIT_XS]) for k in ks]


@given(
    a=st.floats(1, 1000),
    b=st.floats(1, 1000),
    k=st.sampled_from(FIT_KS),
)
def test_a_curve_on_one_of_the_shapes_is_found_exactly(a, b, k):
    ys = [a + b * (x / FIT_XS[-1]) ** k for x in FIT_XS]
    cost, fa, fb, shape = _fit_linear_family(FIT_XS, ys, [0.05] * 5, _power_basis(FIT_KS))
    assert shape == (k,)
    assert (fa, fb) == (pytest.approx(a, rel=1e-6), pytest.approx(b, rel=1e-6))
    assert cost == pytest.approx(0, abs=1e-9)


@given(ys=st.lists(st.floats(1, 1e5), min_size=5, max_size=5))
def test_the_fit_never_takes_a_negative_floor_or_a_falling_term(ys):
    found = _fit_linear_family(FIT_XS, ys, [0.1] * 5, _power_basis(FIT_KS))
    assert found is not None
    _, a, b, _ = found
    assert a >= 0 and b >= 0


def test_falling_points_get_a_flat_line_at_their_weighted_mean():
    # Latency that falls with load: b would be negative, so the fit stays on b = 0.
    ys = [500.0, 400.0, 300.0, 200.0, 100.0]
    _, a, b, _ = _fit_linear_family(FIT_XS, ys, [0.1] * 5, _power_basis([1.0]))
    w = [1 / y**2 for y in ys]
    assert (a, b) == (pytest.approx(sum(wi * y for wi, y in zip(w, ys, strict=True)) / sum(w)), 0.0)
