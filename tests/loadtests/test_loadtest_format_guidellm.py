"""Load-test parsers: guidellm sweep reports, read back in ms / s / tokens/s."""

import json
from datetime import UTC, datetime

import pytest

from loadtests.formats import parse_loadtest
from tests.loadtests.format_files import GUIDELLM


def test_guidellm_sweep_has_seven_runs_at_rising_constant_rates(read):
    runs = parse_loadtest(read(GUIDELLM))
    assert [run.fields["request_rate"] for run in runs] == [1, 2, 4, 6, 8, 10, 12]
    assert all(run.fields["concurrency"] is None for run in runs)
    assert not any(run.request_rate_inf for run in runs)


def test_guidellm_request_latency_in_seconds_becomes_ms(read):
    run = parse_loadtest(read(GUIDELLM))[0]
    assert run.fields["e2e_p99_ms"] == pytest.approx(5529.462690493037)
    assert run.fields["e2e_p999_ms"] == pytest.approx(6291.637347749134)


def test_guidellm_ms_metrics_stay_in_ms(read):
    run = parse_loadtest(read(GUIDELLM))[0]
    assert run.fields["ttft_p99_ms"] == pytest.approx(231.05096676715132)
    assert run.fields["tpot_p50_ms"] == pytest.approx(15.176709642623676)


def test_guidellm_throughputs_are_totals_over_the_duration(read, load):
    raw = load(GUIDELLM)["benchmarks"][3]["metrics"]
    run = parse_loadtest(read(GUIDELLM))[3]
    assert run.fields["qps"] == pytest.approx(657 / 120)
    output_total = raw["output_token_count"]["successful"]["total_sum"]
    prompt_total = raw["prompt_token_count"]["successful"]["total_sum"]
    assert run.fields["output_tps"] == pytest.approx(output_total / 120)
    assert run.fields["input_tps"] == pytest.approx(prompt_total / 120)
    assert run.fields["request_count"] == 657
    assert run.fields["duration_s"] == 120.0
    assert run.errors == 0
    assert run.measured_at == datetime.fromtimestamp(1763900390.0, tz=UTC)
    assert run.tool_version == "0.7.1"


def test_guidellm_tpot_columns_hold_its_itl_and_its_tpot_goes_to_extra(load):
    """guidellm's ITL is (latency - TTFT) / (tokens - 1), PerfHub's TPOT; guidellm's own TPOT
    counts the first token in and is kept for display only."""
    raw = load(GUIDELLM)
    own_tpot = raw["benchmarks"][0]["metrics"]["time_per_output_token_ms"]["successful"]
    own_tpot["percentiles"]["p99"] = 99.0
    run = parse_loadtest(json.dumps(raw))[0]
    assert run.fields["tpot_p99_ms"] == pytest.approx(26.573532526996118)
    assert run.extra["latency_ms"]["latency_per_token"]["p99"] == 99.0
    assert "inter_token_latency_ms" in run.sources["tpot_p99_ms"]


def test_guidellm_label_names_the_strategy_and_rate(read):
    assert parse_loadtest(read(GUIDELLM))[2].label == (
        "guidellm constant 4 req/s, observed concurrency 10.1"
    )


def test_guidellm_concurrent_strategy_gives_a_concurrency(load):
    raw = load(GUIDELLM)
    raw["benchmarks"][0]["config"]["strategy"] = {"type_": "concurrent", "streams": 8}
    run = parse_loadtest(json.dumps(raw))[0]
    assert (run.fields["concurrency"], run.request_rate_inf) == (8, True)
