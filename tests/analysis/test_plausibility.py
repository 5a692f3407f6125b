"""The physical ranges and order rules every entry point shares (analysis.plausibility)."""

import math

import pytest

from analysis import plausibility


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_non_finite_value_is_never_plausible(value):
    assert "finite" in plausibility.LATENCY_MS.problem(value)


def test_a_latency_of_a_day_passes_and_a_millisecond_more_does_not():
    assert plausibility.LATENCY_MS.problem(86_400_000) is None
    assert "under a day" in plausibility.LATENCY_MS.problem(86_400_001)


def test_a_boolean_is_not_a_number():
    assert plausibility.POWER_W.problem(True) == "A number is required."


def test_decreasing_percentiles_name_the_first_one_out_of_order():
    fields = {"e2e_p50_ms": 9000, "e2e_p90_ms": 5000, "e2e_p99_ms": 500}
    assert plausibility.run_problems(fields)[0][0] == "e2e_p90_ms"


def test_missing_percentiles_are_skipped_when_ordering():
    fields = {"ttft_p50_ms": 100, "ttft_p90_ms": None, "ttft_p99_ms": 300, "ttft_p999_ms": 300}
    assert plausibility.run_problems(fields) == []


def test_each_metric_is_ordered_on_its_own():
    fields = {"e2e_p99_ms": 5000, "ttft_p50_ms": 100, "tpot_p50_ms": 20}
    assert plausibility.run_problems(fields) == []


def test_a_first_token_after_the_last_is_impossible():
    assert plausibility.ttft_problem(1200.0, 1000.0) is not None
    assert plausibility.ttft_problem(1000.0, 1000.0) is None


def test_more_memory_used_than_held_is_impossible():
    problems = plausibility.gpu_problems({"mem_used_bytes": 2, "mem_total_bytes": 1})
    assert [name for name, _ in problems] == ["mem_used_bytes"]


def test_a_blank_or_non_numeric_field_is_left_to_the_fields_own_validation():
    ranges = {"replicas": plausibility.GPUS}
    assert plausibility.field_problems({"replicas": ""}, ranges) == []
    assert plausibility.field_problems({"replicas": "many"}, ranges) == []
