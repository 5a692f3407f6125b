import numpy as np
import pytest

from analysis.changepoints import change_points


def _noisy(levels: list[tuple[float, int]], seed: int = 0, noise: float = 0.03) -> np.ndarray:
    rng = np.random.default_rng(seed)
    series = np.concatenate([np.full(count, level) for level, count in levels])
    return series * np.exp(rng.normal(0, noise, series.size))


def test_a_step_of_12_percent_is_found_at_the_run_where_it_starts():
    (step,) = change_points(_noisy([(250.0, 12), (280.0, 8)], noise=0.02))
    assert step.index == 12
    assert step.relative == pytest.approx(0.12, abs=0.03)
    assert (step.runs_before, step.runs_after) == (12, 8)


def test_two_steps_are_both_found():
    steps = change_points(_noisy([(100.0, 10), (130.0, 10), (100.0, 10)], seed=1))
    assert [s.index for s in steps] == [10, 20]
    assert steps[0].relative > 0 > steps[1].relative


def test_a_flat_noisy_history_has_no_change_point():
    assert change_points(_noisy([(250.0, 60)], seed=2)) == []


def test_one_slow_run_is_not_a_step():
    series = _noisy([(250.0, 20)], seed=3)
    series[10] *= 1.5
    assert change_points(series) == []


def test_a_step_smaller_than_the_minimum_is_ignored():
    series = _noisy([(250.0, 15), (260.0, 15)], seed=4, noise=0.002)  # +4%, clear but small
    assert change_points(series) == []
    assert len(change_points(series, min_relative=0.02)) == 1


def test_too_short_a_history_has_no_change_point():
    assert change_points([1.0, 1.0, 2.0, 2.0]) == []


def test_it_rejects_a_non_positive_value():
    with pytest.raises(ValueError, match="positive"):
        change_points([1.0, 0.0, 1.0, 1.0, 1.0, 1.0])
