"""Issue 20's file findings: E2E from `latencies`, AIPerf named as itself with its errors, a
guidellm cap named as a cap, and counts that say what they count."""

import json
from pathlib import Path

import numpy as np
import pytest

from loadtests.formats import LoadTestFormatError, parse_loadtest

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
AIPERF = REAL / "genai-perf" / "wellflat-aiperf-profile_export_aiperf.json"

# 200 successful requests, their end-to-end latencies in seconds: 0.30 .. 1.295.
LATENCIES = [0.3 + 0.005 * i for i in range(200)]


def default_vllm_run(**extra) -> dict:
    """A default `vllm bench serve` result: median/p99 of ttft, tpot and itl, no `e2el`."""
    return {
        "completed": 200, "failed": 0, "duration": 23.0, "request_throughput": 8.7,
        "output_throughput": 1134.75, "request_rate": "inf", "max_concurrency": 4,
        "median_ttft_ms": 283.6, "p99_ttft_ms": 800.6, "median_tpot_ms": 1.14,
        "p99_tpot_ms": 5.93, "median_itl_ms": 5.0, "p99_itl_ms": 9.9,
        "latencies": LATENCIES, **extra,
    }  # fmt: skip


def parse_one(data: dict):
    (run,) = parse_loadtest(json.dumps(data))
    return run


def test_e2e_percentiles_come_from_latencies_when_the_summary_has_none():
    run = parse_one(default_vllm_run())
    expected = np.percentile(np.array(LATENCIES) * 1000, [50, 99])
    assert (run.fields["e2e_p50_ms"], run.fields["e2e_p99_ms"]) == pytest.approx(expected)


def test_e2e_from_latencies_says_where_it_came_from():
    assert "latencies" in parse_one(default_vllm_run()).sources["e2e_p99_ms"]


def test_e2e_from_latencies_leaves_out_a_percentile_too_few_requests_can_give():
    assert parse_one(default_vllm_run()).fields["e2e_p999_ms"] is None


def test_the_summary_keys_win_over_latencies_when_both_exist():
    run = parse_one(default_vllm_run(median_e2el_ms=999.0, p99_e2el_ms=1999.0))
    assert (run.fields["e2e_p50_ms"], run.fields["e2e_p99_ms"]) == (999.0, 1999.0)


def test_a_latencies_entry_that_is_not_a_number_is_refused_naming_it():
    with pytest.raises(LoadTestFormatError, match=r"latencies\[3\]"):
        parse_one(default_vllm_run(latencies=[0.3, 0.4, 0.5, "slow"]))


def test_an_aiperf_export_is_named_aiperf():
    (run,) = parse_loadtest(AIPERF.read_bytes(), filename=AIPERF.name)
    assert run.label.startswith("aiperf ")


def test_an_empty_aiperf_error_summary_is_zero_errors_not_unknown():
    (run,) = parse_loadtest(AIPERF.read_bytes(), filename=AIPERF.name)
    assert run.errors == 0


def aiperf_with(**changes) -> bytes:
    data = json.loads(AIPERF.read_bytes())
    data.update(changes)
    return json.dumps(data).encode()


def test_aiperf_errors_are_the_error_summary_counts_added():
    summary = [{"error_details": {"code": 500}, "count": 3}, {"error_details": {}, "count": 2}]
    (run,) = parse_loadtest(aiperf_with(error_summary=summary), filename=AIPERF.name)
    assert run.errors == 5


def test_a_negative_aiperf_error_count_is_refused_naming_the_field():
    summary = [{"error_details": {}, "count": -1}]
    with pytest.raises(LoadTestFormatError, match=r"error_summary\[0\]\.count"):
        parse_loadtest(aiperf_with(error_summary=summary), filename=AIPERF.name)


def guidellm_constant(max_concurrency: int | None) -> bytes:
    path = Path(__file__).resolve().parents[1] / "fixtures/loadtests/guidellm-sweep-benchmarks.json"
    data = json.loads(path.read_bytes())
    for benchmark in data["benchmarks"]:
        holder = benchmark.get("config") or benchmark["args"]
        holder["strategy"]["max_concurrency"] = max_concurrency
    return json.dumps(data).encode()


def test_a_guidellm_rate_run_does_not_take_its_cap_for_its_concurrency():
    run = parse_loadtest(guidellm_constant(512))[2]
    assert (run.fields["concurrency"], run.extra["concurrency_cap"]) == (None, 512)


def test_a_guidellm_rate_run_label_names_observed_concurrency_and_the_cap_as_a_cap():
    label = parse_loadtest(guidellm_constant(512))[2].label
    assert label == "guidellm constant 4 req/s, observed concurrency 10.1 (cap 512)"


def test_an_itl_sketch_counts_token_gaps_not_requests():
    from loadtests.models import LoadTestSketch

    assert LoadTestSketch(family="itl", count=51690).counted_as == "token gaps"
