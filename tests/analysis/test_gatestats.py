import math

import numpy as np
import pytest

from analysis import gatestats


def test_hodges_lehmann_recovers_a_known_shift_inside_its_interval():
    rng = np.random.default_rng(1)
    base = np.log(rng.lognormal(5, 0.5, 3000))
    cand = np.log(rng.lognormal(5, 0.5, 1000) * 1.2)
    shift, low, high = gatestats.hodges_lehmann(base, cand)
    assert shift == pytest.approx(math.log(1.2), abs=0.03)
    assert low < math.log(1.2) < high
    # The interval is Mann-Whitney's: ~ 2 x 1.96 x sigma sqrt(pi/3) sqrt(1/n + 1/m) wide.
    assert high - low == pytest.approx(
        2 * 1.96 * 0.5 * 1.0233 * math.sqrt(1 / 3000 + 1 / 1000), rel=0.15
    )


def test_quantile_log_counts_the_requests_beyond_it():
    logs = np.sort(np.log(np.arange(1, 1001, dtype=float)))
    value, se, tail = gatestats.quantile_log(logs, 0.99)
    assert tail == 10
    assert math.exp(value) == pytest.approx(np.quantile(np.arange(1, 1001), 0.99))
    assert se > 0


def test_a_quantiles_standard_error_shrinks_with_the_sample():
    rng = np.random.default_rng(2)
    small = gatestats.quantile_log(np.sort(rng.normal(0, 1, 400)), 0.9)[1]
    large = gatestats.quantile_log(np.sort(rng.normal(0, 1, 6400)), 0.9)[1]
    assert large == pytest.approx(small / 4, rel=0.3)


def test_runs_that_agree_within_their_noise_show_no_extra_spread():
    values = np.array([0.0, 0.01, -0.01, 0.005])
    tau2, df = gatestats.between_run_variance([(values, np.full(4, 0.01**2))])
    assert (tau2, df) == (0.0, 3)


def test_runs_far_apart_for_their_noise_show_the_spread():
    values = np.array([0.0, 0.1, -0.1, 0.05, -0.05])
    tau2, _ = gatestats.between_run_variance([(values, np.full(5, 0.001**2))])
    assert math.sqrt(tau2) == pytest.approx(np.std(values, ddof=1), rel=0.05)


def test_one_run_a_side_leaves_the_spread_unknown():
    one = (np.array([0.0]), np.array([0.01]))
    assert gatestats.between_run_variance([one, one]) == (0.0, 0)


def test_closed_loop_throughput_noise_falls_with_the_run_length():
    rng = np.random.default_rng(3)
    short = gatestats.closed_loop_log_variance(rng.lognormal(8, 0.5, 400), 16)
    long = gatestats.closed_loop_log_variance(rng.lognormal(8, 0.5, 1600), 16)
    assert long < short / 2.5


def test_holm_multiplies_the_smallest_p_by_the_rows_and_stays_monotone():
    assert gatestats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert gatestats.holm([]) == []
