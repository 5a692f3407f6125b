"""Workload fingerprints: length quantiles, not only means, decide whether two runs compare."""

from __future__ import annotations

import math

import numpy as np

from analysis import gate
from analysis.fingerprint import Fingerprint, Lengths, differences, distance


def fingerprint(outputs, concurrency=16) -> Fingerprint:
    return Fingerprint(
        prompt=Lengths.from_values([512] * len(outputs)),
        output=Lengths.from_values(outputs),
        concurrency=concurrency,
        request_rate=math.inf,
    )


FIXED = [200] * 400  # every request 200 tokens (ignore_eos)
SPREAD = [20, 380] * 200  # half short, half long: the same mean, 200


def test_the_old_10_percent_rule_allows_two_workloads_with_one_mean():
    shape = gate.WorkloadShape(16, math.inf, 512.0, 200.0)
    assert gate.shape_differences(shape, shape) == []  # both runs have these means


def test_the_fingerprint_refuses_them_and_names_the_quantile():
    reasons = differences(fingerprint(FIXED), fingerprint(SPREAD))
    assert any("output length P25: baseline 200 tokens, candidate 20 tokens" in r for r in reasons)


def test_repeats_of_one_realistic_workload_are_compatible():
    rng = np.random.default_rng(3)
    a, b = (rng.lognormal(math.log(200), 0.6, 400).round() for _ in range(2))
    assert differences(fingerprint(list(a)), fingerprint(list(b))) == []


def test_another_concurrency_is_infinitely_far():
    assert distance(fingerprint(FIXED), fingerprint(FIXED, concurrency=32)) == math.inf


def test_distance_is_the_largest_log_ratio_of_a_length_statistic():
    longer = fingerprint([220] * 400)
    assert distance(fingerprint(FIXED), longer) == math.log(220 / 200)


def test_a_setting_recorded_on_both_sides_must_match():
    a = Fingerprint(ignore_eos=True, concurrency=8)
    b = Fingerprint(ignore_eos=False, concurrency=8)
    assert differences(a, b) == ["different ignore_eos: baseline True, candidate False"]


def test_it_round_trips_through_json():
    fp = fingerprint(SPREAD)
    assert Fingerprint.from_dict(fp.to_dict()) == fp
