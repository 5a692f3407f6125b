import json
import math

import numpy as np
import pytest

from analysis import gate
from analysis.gate import WorkloadShape

BASELINE = {
    "e2e_p50_ms": 2400.0,
    "e2e_p90_ms": 3900.0,
    "e2e_p99_ms": 5200.0,
    "ttft_p50_ms": 45.0,
    "ttft_p90_ms": 90.0,
    "ttft_p99_ms": 120.0,
    "tpot_p50_ms": 18.0,
    "tpot_p90_ms": 22.0,
    "tpot_p99_ms": 30.0,
    "qps": 12.5,
    "output_tps": 3200.0,
}


def _scaled(values: dict, latency: float = 1.0, throughput: float = 1.0) -> dict:
    return {k: v * (latency if k.endswith("_ms") else throughput) for k, v in values.items()}


def _row(result: gate.GateResult, metric: str) -> gate.GateRow:
    return next(row for row in result.rows if row.metric == metric)


def _ttft_record(samples: np.ndarray) -> dict:
    return {f"ttft_p{p}_ms": float(np.quantile(samples, int(p) / 100)) for p in ("50", "90", "99")}


# --- thresholds ---------------------------------------------------------------------------


def test_an_identical_rerun_passes():
    result = gate.compare(BASELINE, dict(BASELINE))
    assert result.passed
    assert {row.verdict for row in result.rows} == {"pass", "not compared"}


def test_the_all_requests_rows_need_per_request_samples():
    row = _row(gate.compare(BASELINE, dict(BASELINE)), "ttft_shift")
    assert row.verdict == "not compared"
    assert row.note == "needs per-request samples in every run"


def test_p99_ttft_up_30_percent_fails():
    candidate = dict(BASELINE, ttft_p99_ms=BASELINE["ttft_p99_ms"] * 1.3)
    result = gate.compare(BASELINE, candidate)
    assert not result.passed
    assert [row.metric for row in result.regressions] == ["ttft_p99_ms"]
    assert _row(result, "ttft_p99_ms").relative_change == pytest.approx(0.3)


def test_a_two_percent_wobble_passes():
    candidate = _scaled(BASELINE, latency=1.02, throughput=0.98)
    assert gate.compare(BASELINE, candidate).passed


def test_a_tiny_absolute_change_on_a_tiny_number_passes_thanks_to_the_floor():
    baseline = dict(BASELINE, tpot_p50_ms=1.0)
    candidate = dict(BASELINE, tpot_p50_ms=1.5)  # +50%, but only 0.5 ms
    row = _row(gate.compare(baseline, candidate), "tpot_p50_ms")
    assert row.verdict == "pass"
    assert "floor" in row.note


def test_an_improvement_passes_and_is_marked_improved():
    candidate = _scaled(BASELINE, latency=0.7, throughput=1.3)
    result = gate.compare(BASELINE, candidate)
    assert result.passed
    assert _row(result, "ttft_p99_ms").verdict == "improved"
    assert _row(result, "qps").verdict == "improved"


def test_a_throughput_drop_beyond_the_threshold_fails():
    candidate = dict(BASELINE, output_tps=BASELINE["output_tps"] * 0.8)
    result = gate.compare(BASELINE, candidate)
    assert [row.metric for row in result.regressions] == ["output_tps"]


def test_a_metric_missing_in_the_candidate_is_not_compared():
    candidate = dict(BASELINE, ttft_p99_ms=None)
    row = _row(gate.compare(BASELINE, candidate), "ttft_p99_ms")
    assert row.verdict == "not compared"
    assert row.change is None
    assert row.note == "not measured in candidate"


def test_a_metric_missing_in_the_baseline_is_not_compared_even_if_the_candidate_is_awful():
    baseline = {k: v for k, v in BASELINE.items() if k != "e2e_p99_ms"}
    candidate = dict(BASELINE, e2e_p99_ms=99999.0)
    result = gate.compare(baseline, candidate)
    assert _row(result, "e2e_p99_ms").verdict == "not compared"
    assert result.passed


def test_it_refuses_runs_with_no_metric_in_common():
    with pytest.raises(ValueError, match="Nothing to compare"):
        gate.compare({"ttft_p99_ms": 100.0}, {"qps": 3.0})


def test_it_rejects_a_value_that_is_not_a_number_naming_the_metric():
    with pytest.raises(ValueError, match=r"candidate\['qps'\]"):
        gate.compare(BASELINE, dict(BASELINE, qps="fast"))


def test_metrics_without_a_rule_are_ignored():
    result = gate.compare(dict(BASELINE, gpu_util=0.9), dict(BASELINE, gpu_util=0.1))
    assert "gpu_util" not in {row.metric for row in result.rows}


# --- significance ---------------------------------------------------------------------------


def test_a_p99_on_150_requests_says_not_enough_tail_data_never_within_noise():
    rng = np.random.default_rng(1)
    base = rng.lognormal(4, 0.5, 150)
    cand = rng.lognormal(4, 0.5, 150)  # same distribution, another draw
    result = gate.compare(
        _ttft_record(base),
        _ttft_record(cand),
        baseline_samples={"ttft": base},
        candidate_samples={"ttft": cand},
    )
    row = _row(result, "ttft_p99_ms")
    assert result.passed
    assert row.verdict == "not enough data"
    assert row.note.startswith("not enough tail data")
    assert "1,000 requests" in row.note  # the run length that would decide it
    assert row.tail == 1


def test_with_per_request_samples_a_real_shift_fails_on_every_row():
    rng = np.random.default_rng(8)
    base = rng.lognormal(4, 0.5, 2000)
    cand = rng.lognormal(4, 0.5, 2000) * 1.3
    result = gate.compare(
        _ttft_record(base),
        _ttft_record(cand),
        baseline_samples={"ttft": base},
        candidate_samples={"ttft": cand},
    )
    assert [row.metric for row in result.regressions] == [
        "ttft_shift",
        "ttft_p50_ms",
        "ttft_p90_ms",
        "ttft_p99_ms",
    ]
    shift = _row(result, "ttft_shift")
    assert shift.test == "Hodges-Lehmann / Mann-Whitney"
    assert shift.relative_change == pytest.approx(0.3, abs=0.05)
    assert shift.interval[0] < 0.3 < shift.interval[1]
    assert _row(result, "ttft_p99_ms").test == "order statistics"


def test_a_tail_only_regression_is_caught_by_its_own_tail_row():
    rng = np.random.default_rng(9)
    base = rng.lognormal(4, 0.3, 2000)
    cand = rng.lognormal(4, 0.3, 2000)
    slow = np.argsort(cand)[-40:]
    cand[slow] *= 2  # the slowest 2% of requests take twice as long; the median does not move
    result = gate.compare(
        _ttft_record(base),
        _ttft_record(cand),
        baseline_samples={"ttft": base},
        candidate_samples={"ttft": cand},
    )
    assert [row.metric for row in result.regressions] == ["ttft_p99_ms"]
    assert _row(result, "ttft_p99_ms").tail == 20


def test_the_significance_test_is_deterministic():
    rng = np.random.default_rng(10)
    base, cand = rng.lognormal(4, 0.5, 300), rng.lognormal(4.05, 0.5, 300)
    kwargs = dict(baseline_samples={"ttft": base}, candidate_samples={"ttft": cand})
    first = gate.compare(_ttft_record(base), _ttft_record(cand), **kwargs)
    second = gate.compare(_ttft_record(base), _ttft_record(cand), **kwargs)
    assert first.to_dict() == second.to_dict()


def test_every_tested_row_states_its_minimum_detectable_effect():
    rng = np.random.default_rng(11)
    base, cand = rng.lognormal(6, 0.5, 1000), rng.lognormal(6, 0.5, 1000)  # ~400 ms
    result = gate.compare(
        _ttft_record(base),
        _ttft_record(cand),
        baseline_samples={"ttft": base},
        candidate_samples={"ttft": cand},
    )
    tested = [row for row in result.rows if row.p_value is not None]
    assert [row.metric for row in tested] == [
        "ttft_shift",
        "ttft_p50_ms",
        "ttft_p90_ms",
        "ttft_p99_ms",
    ]
    mde = {row.metric: row.mde for row in tested}
    # A tail quantile resting on 10 requests sees far less than the whole distribution does.
    assert 0.05 <= mde["ttft_shift"] < mde["ttft_p50_ms"] < mde["ttft_p99_ms"]
    text = gate.format_table(result)
    assert "MDE" in text.splitlines()[0] and "Holm" in text


# --- sets of runs ---------------------------------------------------------------------------


def _runs(values: list[float], metric: str = "qps") -> list[gate.RunData]:
    return [gate.RunData({metric: v}) for v in values]


HISTORY = [10.0, 10.4, 9.7, 10.2, 9.9]  # five accepted runs: about 3% apart


def test_throughput_within_the_spread_of_the_history_passes():
    result = gate.compare_runs(_runs(HISTORY), _runs([9.45]))  # -5.6%: beyond 5%, not the spread
    row = _row(result, "qps")
    assert (row.verdict, row.test) == ("pass", "t-test over runs")


def test_throughput_far_below_the_history_fails():
    result = gate.compare_runs(_runs(HISTORY), _runs([7.0, 7.1, 6.9]))
    assert [row.metric for row in result.regressions] == ["qps"]
    assert result.baseline_runs == 5 and result.candidate_runs == 3


def test_one_run_a_side_without_samples_falls_back_to_the_thresholds():
    row = _row(gate.compare_runs(_runs([10.0]), _runs([8.0])), "qps")
    assert (row.verdict, row.test) == ("regression", "thresholds only")


def test_closed_loop_runs_test_throughput_against_their_own_request_noise():
    rng = np.random.default_rng(12)

    def run(qps: float) -> gate.RunData:
        e2e = rng.lognormal(8, 0.5, 1000)
        return gate.RunData({"qps": qps}, samples={"e2e": e2e}, concurrency=16)

    result = gate.compare_runs([run(10.0)], [run(8.0)])
    row = _row(result, "qps")
    assert (row.verdict, row.test) == ("regression", "random effects")


def test_it_refuses_an_empty_side():
    with pytest.raises(ValueError, match="at least one baseline run"):
        gate.compare_runs([], _runs([1.0]))


def test_it_rejects_samples_with_negative_values():
    with pytest.raises(ValueError, match=r"baseline_samples\['ttft'\]"):
        gate.compare(BASELINE, BASELINE, baseline_samples={"ttft": [1.0, -2.0]})


# --- rules ----------------------------------------------------------------------------------


def test_default_rules_cover_every_latency_family_and_percentile_and_throughput():
    assert gate.DEFAULT_RULES["ttft_p99_ms"].direction == "lower"
    assert gate.DEFAULT_RULES["ttft_p99_ms"].floor == 10.0
    assert gate.DEFAULT_RULES["tpot_p50_ms"].floor == 2.0
    assert gate.DEFAULT_RULES["qps"].direction == "higher"
    assert set(gate.DEFAULT_RULES) == {
        *(f"{m}_{p}_ms" for m in ("e2e", "ttft", "tpot") for p in ("p50", "p90", "p99")),
        *(f"{m}_shift" for m in ("e2e", "ttft", "tpot")),
        "qps",
        "output_tps",
    }


def test_a_service_override_loosens_one_metric():
    rules = gate.rules_with_overrides({"ttft_p99_ms": {"relative": 0.5}})
    candidate = dict(BASELINE, ttft_p99_ms=BASELINE["ttft_p99_ms"] * 1.3)
    assert gate.compare(BASELINE, candidate, rules=rules).passed
    assert gate.DEFAULT_RULES["ttft_p99_ms"].relative == 0.05  # defaults untouched


def test_an_override_can_add_a_metric():
    rules = gate.rules_with_overrides(
        {"ttft_p95_ms": {"direction": "lower", "relative": 0.05, "floor": 10}}
    )
    result = gate.compare({"ttft_p95_ms": 100.0}, {"ttft_p95_ms": 150.0}, rules=rules)
    assert [row.metric for row in result.regressions] == ["ttft_p95_ms"]


def test_an_override_with_an_unknown_field_is_rejected_naming_it():
    with pytest.raises(ValueError, match="threshold"):
        gate.rules_with_overrides({"qps": {"threshold": 0.1}})


def test_an_override_with_a_bad_direction_is_rejected():
    with pytest.raises(ValueError, match="direction"):
        gate.rules_with_overrides({"qps": {"direction": "up"}})


def test_a_new_metric_without_a_direction_is_rejected():
    with pytest.raises(ValueError, match="needs direction"):
        gate.rules_with_overrides({"itl_p99_ms": {"relative": 0.05, "floor": 1}})


# --- output ---------------------------------------------------------------------------------


def test_the_result_serializes_to_json():
    candidate = dict(BASELINE, ttft_p99_ms=156.0, e2e_p50_ms=None)
    data = json.loads(json.dumps(gate.compare(BASELINE, candidate).to_dict()))
    assert data["passed"] is False
    assert data["regressions"] == ["ttft_p99_ms"]
    assert {row["verdict"] for row in data["rows"]} == {"pass", "regression", "not compared"}


def test_the_table_has_a_row_per_metric_and_ends_with_the_verdict():
    candidate = dict(BASELINE, ttft_p99_ms=156.0)
    text = gate.format_table(gate.compare(BASELINE, candidate))
    lines = text.splitlines()
    assert lines[0].split()[:10] == [
        "metric",
        "baseline",
        "candidate",
        "change",
        "95%",
        "interval",
        "threshold",
        "test",
        "p",
        "(Holm)",
    ]
    assert any("TTFT P99" in line and "REGRESSION" in line and "+30.0%" in line for line in lines)
    assert lines[-1].startswith("FAIL: 1 regression")


def test_the_table_of_a_passing_gate_ends_with_pass():
    text = gate.format_table(gate.compare(BASELINE, dict(BASELINE)))
    assert text.splitlines()[-1] == "PASS: 11 metrics compared, no regression (thresholds only)."


# --- workload shape -------------------------------------------------------------------------

SHAPE = WorkloadShape(
    concurrency=16, request_rate=math.inf, prompt_tokens_mean=500, output_tokens_mean=200
)


def test_the_same_shape_has_no_differences():
    assert gate.shape_differences(SHAPE, WorkloadShape(16, math.inf, 500, 200)) == []


def test_a_different_concurrency_is_reported():
    reasons = gate.shape_differences(SHAPE, WorkloadShape(32, math.inf, 500, 200))
    assert reasons == ["different concurrency: baseline 16, candidate 32"]


def test_a_doubled_prompt_length_is_reported():
    reasons = gate.shape_differences(SHAPE, WorkloadShape(16, math.inf, 1000, 200))
    assert len(reasons) == 1
    assert "prompt length" in reasons[0] and "500" in reasons[0] and "1000" in reasons[0]


def test_a_length_within_the_tolerance_is_the_same_shape():
    assert gate.shape_differences(SHAPE, WorkloadShape(16, math.inf, 540, 190)) == []


def test_a_different_request_rate_is_reported():
    reasons = gate.shape_differences(SHAPE, WorkloadShape(16, 10.0, 500, 200))
    assert reasons == ["different request rate: baseline unlimited (inf), candidate 10 req/s"]


def test_a_length_recorded_on_one_side_only_is_reported():
    reasons = gate.shape_differences(SHAPE, WorkloadShape(16, math.inf, None, 200))
    assert "recorded on one side only" in reasons[0]


def test_a_shape_is_built_from_a_run_record():
    record = {
        "concurrency": 16,
        "request_rate": math.inf,
        "prompt_tokens_mean": 500.0,
        "output_tokens_mean": 200.0,
        "qps": 3.0,
    }
    assert WorkloadShape.from_record(record) == SHAPE


def test_a_shape_rejects_a_zero_concurrency():
    with pytest.raises(ValueError, match="concurrency"):
        WorkloadShape(concurrency=0)


# --- the reading an experiment records --------------------------------------------------------


def test_an_experiments_reading_names_its_gain_and_its_price():
    candidate = {**_scaled(BASELINE, throughput=1.5), "tpot_p50_ms": 36.0}
    reading = gate.experiment_reading(gate.compare(BASELINE, candidate))
    assert "Better: QPS +6.25 req/s (+50.0%)" in reading
    assert "Worse: TPOT P50 +18.0 ms (+100.0%)" in reading


def test_an_experiments_reading_of_one_run_a_side_says_thresholds_alone():
    reading = gate.experiment_reading(gate.compare(BASELINE, dict(BASELINE)))
    assert "1 run before and 1 after, judged by the rows' thresholds alone" in reading
