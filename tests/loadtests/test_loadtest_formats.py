"""Load-test parsers: every fixture format, detection, units, and bad files with clear messages.

Expected numbers are the fixture files' own, read back in ms / s / tokens/s.
"""

import json
from datetime import UTC, datetime

import pytest

from dossiers.models import Baseline
from loadtests.formats import (
    FIELD_NAMES,
    LoadTestFormatError,
    format_names,
    parse_loadtest,
)

VLLM_C16 = "vllm-bench-serve-c16.json"
VLLM_SWEEP = "vllm-bench-concurrency-sweep.jsonl"
GENAI_PERF = "genai-perf-profile_export_genai_perf.json"
GUIDELLM = "guidellm-sweep-benchmarks.json"
LLMPERF = "llmperf-summary.json"
ALL_FIXTURES = {
    VLLM_C16: ("vllm-bench", 1),
    VLLM_SWEEP: ("vllm-bench", 7),
    GENAI_PERF: ("genai-perf", 1),
    GUIDELLM: ("guidellm", 7),
    LLMPERF: ("llmperf", 1),
}


@pytest.fixture
def read(fixtures_dir):
    def read(name: str) -> bytes:
        return (fixtures_dir / "loadtests" / name).read_bytes()

    return read


@pytest.fixture
def load(read):
    def load(name: str):
        return json.loads(read(name))

    return load


def only(runs):
    assert len(runs) == 1
    return runs[0]


def sweep_lines(read) -> list[str]:
    return read(VLLM_SWEEP).decode().splitlines()


# -- every fixture ------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), ALL_FIXTURES.items())
def test_each_fixture_parses_into_its_format_and_number_of_runs(read, name, expected):
    fmt, count = expected
    runs = parse_loadtest(read(name))
    assert [run.format for run in runs] == [fmt] * count


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_fields_are_exactly_the_measured_run_columns(read, name):
    columns = {field.name for field in Baseline._meta.get_fields()}
    for run in parse_loadtest(read(name)):
        assert tuple(run.fields) == FIELD_NAMES
        assert set(run.fields) <= columns


@pytest.mark.parametrize("name", ALL_FIXTURES)
def test_extra_can_be_stored_as_json(read, name):
    for run in parse_loadtest(read(name)):
        json.dumps(run.extra, allow_nan=False)


def test_a_string_is_read_like_bytes(read):
    assert only(parse_loadtest(read(VLLM_C16).decode())).fields["concurrency"] == 16


# -- vllm bench serve ---------------------------------------------------------------------------


def test_vllm_c16_reads_concurrency_and_throughput_as_written(read, load):
    raw = load(VLLM_C16)
    run = only(parse_loadtest(read(VLLM_C16)))
    assert run.fields["concurrency"] == 16
    assert run.fields["qps"] == raw["request_throughput"]
    assert run.fields["output_tps"] == raw["output_throughput"]
    assert run.fields["request_count"] == 400
    assert run.fields["duration_s"] == raw["duration"]


def test_vllm_c16_reads_each_percentile_including_p99_9(read, load):
    raw = load(VLLM_C16)
    fields = only(parse_loadtest(read(VLLM_C16))).fields
    assert fields["ttft_p99_ms"] == raw["p99_ttft_ms"]
    assert fields["ttft_p999_ms"] == raw["p99.9_ttft_ms"]
    assert fields["tpot_p50_ms"] == raw["p50_tpot_ms"]
    assert fields["e2e_p95_ms"] == raw["p95_e2el_ms"]


def test_vllm_inf_request_rate_is_no_rate_with_the_inf_flag(read):
    run = only(parse_loadtest(read(VLLM_C16)))
    assert run.fields["request_rate"] is None
    assert run.request_rate_inf is True


def test_vllm_input_rate_is_total_minus_output_throughput(read, load):
    raw = load(VLLM_C16)
    run = only(parse_loadtest(read(VLLM_C16)))
    expected = raw["total_token_throughput"] - raw["output_throughput"]
    assert run.fields["input_tps"] == pytest.approx(expected)


def test_vllm_per_request_ttfts_become_ms_samples(read, load):
    raw = load(VLLM_C16)
    run = only(parse_loadtest(read(VLLM_C16)))
    assert len(run.samples["ttft"]) == 400
    assert run.samples["ttft"][0] == pytest.approx(raw["ttfts"][0] * 1000)


def test_vllm_prompt_and_output_lengths_come_from_the_per_request_lists(read, load):
    raw = load(VLLM_C16)
    run = only(parse_loadtest(read(VLLM_C16)))
    assert run.fields["prompt_tokens_mean"] == pytest.approx(raw["total_input_tokens"] / 400)
    assert run.fields["output_tokens_mean"] == pytest.approx(raw["total_output_tokens"] / 400)
    assert run.fields["prompt_tokens_std"] > 0


def test_vllm_date_becomes_an_aware_utc_datetime(read):
    run = only(parse_loadtest(read(VLLM_C16)))
    assert run.measured_at == datetime(2026, 11, 12, 10, 15, tzinfo=UTC)


def test_vllm_label_names_the_concurrency(read):
    assert only(parse_loadtest(read(VLLM_C16))).label == "vllm bench c=16"


def test_vllm_workload_shape_is_concurrency_rate_and_lengths(read):
    run = only(parse_loadtest(read(VLLM_C16)))
    concurrency, rate, prompt, output = run.workload_shape
    assert (concurrency, rate) == (16, float("inf"))
    assert prompt == run.fields["prompt_tokens_mean"]
    assert output == run.fields["output_tokens_mean"]


def test_vllm_keeps_model_and_itl_in_extra(read, load):
    raw = load(VLLM_C16)
    run = only(parse_loadtest(read(VLLM_C16)))
    assert run.extra["model_id"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert run.extra["latency_ms"]["itl"]["p99"] == raw["p99_itl_ms"]
    assert run.extra["latency_ms"]["ttft"]["mean"] == raw["mean_ttft_ms"]


def test_vllm_tpot_columns_hold_tpot_when_itl_differs(load):
    raw = load(VLLM_C16)
    raw["p99_itl_ms"] = 99.0
    fields = only(parse_loadtest(json.dumps(raw))).fields
    assert fields["tpot_p99_ms"] == raw["p99_tpot_ms"]


def test_the_vllm_sweep_has_seven_runs_at_rising_concurrency(read):
    runs = parse_loadtest(read(VLLM_SWEEP))
    assert [run.fields["concurrency"] for run in runs] == [1, 2, 4, 8, 16, 32, 64]


def test_the_vllm_sweep_keeps_file_order_and_p99_values(read):
    lines = [json.loads(line) for line in sweep_lines(read)]
    runs = parse_loadtest(read(VLLM_SWEEP))
    assert [run.fields["ttft_p99_ms"] for run in runs] == [line["p99_ttft_ms"] for line in lines]


def test_the_vllm_sweep_has_only_median_and_p99_so_other_percentiles_are_missing_not_zero(read):
    lines = [json.loads(line) for line in sweep_lines(read)]
    for run, line in zip(parse_loadtest(read(VLLM_SWEEP)), lines, strict=True):
        for metric, key in (("e2e", "e2el"), ("ttft", "ttft"), ("tpot", "tpot")):
            assert run.fields[f"{metric}_p50_ms"] == line[f"median_{key}_ms"]
            assert run.fields[f"{metric}_p90_ms"] is None
            assert run.fields[f"{metric}_p999_ms"] is None
            assert run.fields[f"{metric}_p99_ms"] > 0


def test_the_vllm_sweep_keeps_the_median_for_display(read):
    run = parse_loadtest(read(VLLM_SWEEP))[0]
    assert run.extra["latency_ms"]["ttft"]["median"] == pytest.approx(43.68246992288106)


def test_vllm_reads_the_old_request_goodput_spelling(load):
    raw = load(VLLM_C16)
    del raw["request_goodput"]
    raw["request_goodput:"] = 2.5
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.extra["goodput_rps"] == 2.5


def test_an_old_vllm_file_without_max_concurrency_has_no_concurrency(load):
    raw = load(VLLM_C16)
    for key in ("max_concurrency", "failed", "date"):
        del raw[key]
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.fields["concurrency"] is None
    assert run.measured_at is None


def test_vllm_numeric_request_rate_is_kept(load):
    raw = load(VLLM_C16)
    raw["request_rate"] = 4.0
    run = only(parse_loadtest(json.dumps(raw)))
    assert (run.fields["request_rate"], run.request_rate_inf) == (4.0, False)


def test_vllm_failed_requests_are_counted_and_left_out_of_samples(load):
    raw = load(VLLM_C16)
    del raw["failed"]
    raw["errors"][1] = "Bad Request"
    raw["ttfts"][1] = 0.0
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.errors == 1
    assert len(run.samples["ttft"]) == 399
    assert 0.0 not in run.samples["ttft"]


def test_vllm_itls_give_itl_e2e_and_tpot_samples_in_ms(load):
    raw = load(VLLM_C16)
    raw.update(
        ttfts=[0.1, 0.2],
        itls=[[0.02, 0.03], [0.01, 0.01, 0.01]],
        output_lens=[3, 4],
        input_lens=[100, 200],
        errors=["", ""],
    )
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.samples["itl"] == pytest.approx([20, 30, 10, 10, 10])
    assert run.samples["e2e"] == pytest.approx([150, 230])
    assert run.samples["tpot"] == pytest.approx([25, 10])


# -- GenAI-Perf ---------------------------------------------------------------------------------


def test_genai_perf_reads_concurrency_and_throughputs(read):
    run = only(parse_loadtest(read(GENAI_PERF)))
    assert run.fields["concurrency"] == 32
    assert run.request_rate_inf is True
    assert run.fields["qps"] == 6.2
    assert run.fields["output_tps"] == pytest.approx(1863.9432)
    assert run.fields["request_count"] == 500


def test_genai_perf_reads_percentiles_in_ms_and_p999_is_missing(read):
    fields = only(parse_loadtest(read(GENAI_PERF))).fields
    assert fields["ttft_p99_ms"] == pytest.approx(634.1742050801715)
    assert fields["e2e_p50_ms"] == pytest.approx(5829.305414011333)
    assert fields["ttft_p999_ms"] is None


def test_genai_perf_inter_token_latency_fills_tpot(read):
    fields = only(parse_loadtest(read(GENAI_PERF))).fields
    assert fields["tpot_p99_ms"] == pytest.approx(34.873459416018996)


def test_genai_perf_gpu_utilization_percent_becomes_a_ratio(read):
    run = only(parse_loadtest(read(GENAI_PERF)))
    assert run.fields["gpu_util"] == pytest.approx(0.715)
    assert run.extra["telemetry"]["gpu_memory_used"]["gpus"]["gpu0"] == 71.2


def test_genai_perf_lengths_and_model(read):
    run = only(parse_loadtest(read(GENAI_PERF)))
    assert run.fields["prompt_tokens_mean"] == pytest.approx(549.892)
    assert run.fields["output_tokens_std"] == pytest.approx(16.543866053616366)
    assert run.extra["model"] == "mistralai/Mistral-7B-Instruct-v0.3"


def test_genai_perf_latencies_in_seconds_are_converted_to_ms(load):
    raw = load(GENAI_PERF)
    raw["time_to_first_token"] = {"unit": "s", "avg": 0.2, "p99": 0.5}
    fields = only(parse_loadtest(json.dumps(raw))).fields
    assert fields["ttft_p99_ms"] == pytest.approx(500)


def test_genai_perf_derived_duration_is_count_over_throughput(read):
    run = only(parse_loadtest(read(GENAI_PERF)))
    assert run.fields["duration_s"] == pytest.approx(500 / 6.2)
    assert "derived" in run.sources["duration_s"]


# -- guidellm -----------------------------------------------------------------------------------


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


def test_guidellm_tpot_columns_hold_tpot_and_itl_goes_to_extra(load):
    raw = load(GUIDELLM)
    itl = raw["benchmarks"][0]["metrics"]["inter_token_latency_ms"]["successful"]
    itl["percentiles"]["p99"] = 99.0
    run = parse_loadtest(json.dumps(raw))[0]
    assert run.fields["tpot_p99_ms"] == pytest.approx(26.573532526996118)
    assert run.extra["latency_ms"]["itl"]["p99"] == 99.0


def test_guidellm_label_names_the_strategy_and_rate(read):
    assert parse_loadtest(read(GUIDELLM))[2].label == (
        "guidellm constant 4 req/s, observed concurrency 10.1"
    )


def test_guidellm_concurrent_strategy_gives_a_concurrency(load):
    raw = load(GUIDELLM)
    raw["benchmarks"][0]["config"]["strategy"] = {"type_": "concurrent", "streams": 8}
    run = parse_loadtest(json.dumps(raw))[0]
    assert (run.fields["concurrency"], run.request_rate_inf) == (8, True)


# -- llmperf ------------------------------------------------------------------------------------


def test_llmperf_reads_concurrency_counts_and_errors(read):
    run = only(parse_loadtest(read(LLMPERF)))
    assert run.fields["concurrency"] == 16
    assert run.request_rate_inf is True
    assert run.fields["request_count"] == 200
    assert run.errors == 0
    assert run.fields["output_tps"] == 412.7
    assert run.fields["qps"] == pytest.approx(172.4 / 60)


def test_llmperf_seconds_become_ms(read):
    fields = only(parse_loadtest(read(LLMPERF))).fields
    assert fields["ttft_p99_ms"] == pytest.approx(1247.2752111089578)
    assert fields["e2e_p50_ms"] == pytest.approx(4832.278458273956)
    assert fields["tpot_p90_ms"] == pytest.approx(41.90670545274777)
    assert fields["e2e_p999_ms"] is None


def test_llmperf_min_and_max_written_as_strings_are_numbers(read):
    run = only(parse_loadtest(read(LLMPERF)))
    tokens = run.extra["stats"]["number_input_tokens"]
    assert (tokens["min"], tokens["max"]) == (508.0, 610.0)


def test_llmperf_measured_lengths_and_time(read):
    run = only(parse_loadtest(read(LLMPERF)))
    assert run.fields["prompt_tokens_mean"] == pytest.approx(550.685)
    assert run.fields["output_tokens_std"] == pytest.approx(12.14125199474914)
    assert run.measured_at == datetime.fromtimestamp(1763901234, tz=UTC)
    assert run.tool_version == "2023-08-31"


# -- detection ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), ALL_FIXTURES.items())
def test_detection_ignores_a_misleading_file_name(read, name, expected):
    runs = parse_loadtest(read(name), filename="llmperf_summary_genai_perf_guidellm.jsonl")
    assert runs[0].format == expected[0]


@pytest.mark.parametrize(("name", "expected"), ALL_FIXTURES.items())
def test_format_forces_the_parser(read, name, expected):
    assert parse_loadtest(read(name), format=expected[0])[0].format == expected[0]


def test_forcing_the_wrong_format_fails_naming_that_format(read):
    with pytest.raises(LoadTestFormatError, match=r"^llmperf: missing key"):
        parse_loadtest(read(VLLM_C16), format="llmperf")


def test_an_unknown_forced_format_is_refused():
    with pytest.raises(LoadTestFormatError, match="unknown format 'locust'"):
        parse_loadtest("{}", format="locust")


def test_the_file_name_breaks_a_tie_between_matching_formats(load):
    raw = load(VLLM_C16)
    raw["results_num_completed_requests"] = 400  # now also looks like llmperf
    content = json.dumps(raw)
    with pytest.raises(LoadTestFormatError, match="matches vllm-bench and llmperf"):
        parse_loadtest(content)
    assert only(parse_loadtest(content, filename="run-vllm-c16.json")).format == "vllm-bench"


# -- bad files ----------------------------------------------------------------------------------


@pytest.mark.parametrize("content", [b"", b"  \n\n", ""])
def test_an_empty_file_is_refused(content):
    with pytest.raises(LoadTestFormatError, match="the file is empty"):
        parse_loadtest(content)


def test_an_empty_file_names_the_forced_format():
    with pytest.raises(LoadTestFormatError, match=r"^guidellm: the file is empty"):
        parse_loadtest(b"", format="guidellm")


def test_a_file_that_is_not_json_is_refused():
    with pytest.raises(LoadTestFormatError, match="not valid JSON"):
        parse_loadtest(b"Successful requests: 400\nBenchmark duration (s): 125.97\n")


def test_a_file_that_is_not_utf8_is_refused():
    with pytest.raises(LoadTestFormatError, match="not UTF-8"):
        parse_loadtest(b"\xff\xfe{\x00")


def test_json_of_an_unknown_shape_lists_the_formats_expected():
    with pytest.raises(LoadTestFormatError) as caught:
        parse_loadtest(b'{"hello": "world"}')
    assert str(caught.value) == (
        "could not detect the format: expected one of " + ", ".join(format_names())
    )


def test_a_json_list_is_an_unknown_shape():
    with pytest.raises(LoadTestFormatError, match="could not detect the format"):
        parse_loadtest(b"[1, 2, 3]")


def test_a_broken_line_3_fails_the_whole_json_lines_file(read):
    lines = sweep_lines(read)
    lines[2] = lines[2][:200]
    with pytest.raises(LoadTestFormatError, match=r"^vllm-bench: line 3: not valid JSON"):
        parse_loadtest("\n".join(lines))


def test_a_json_lines_file_missing_a_key_on_line_3_names_line_and_key(read):
    lines = sweep_lines(read)
    record = json.loads(lines[2])
    del record["completed"]
    lines[2] = json.dumps(record)
    with pytest.raises(LoadTestFormatError) as caught:
        parse_loadtest("\n".join(lines))
    assert str(caught.value) == "vllm-bench: line 3: missing key 'completed'"


def test_a_vllm_file_missing_a_required_key_names_it(load):
    raw = load(VLLM_C16)
    del raw["duration"]
    with pytest.raises(LoadTestFormatError) as caught:
        parse_loadtest(json.dumps(raw), format="vllm-bench")
    assert str(caught.value) == "vllm-bench: missing key 'duration'"


def test_a_vllm_ttft_that_is_not_a_number_names_its_index(load):
    raw = load(VLLM_C16)
    raw["ttfts"][5] = "fast"
    with pytest.raises(LoadTestFormatError, match=r"^vllm-bench: ttfts\[5\]: expected a number"):
        parse_loadtest(json.dumps(raw))


def test_a_bad_vllm_date_is_refused(load):
    raw = load(VLLM_C16)
    raw["date"] = "yesterday"
    with pytest.raises(LoadTestFormatError, match=r"^vllm-bench: date: expected YYYYMMDD-HHMMSS"):
        parse_loadtest(json.dumps(raw))


def test_a_guidellm_metric_that_is_not_an_object_names_its_path(load):
    raw = load(GUIDELLM)
    raw["benchmarks"][2]["metrics"]["request_latency"] = 3.2
    with pytest.raises(LoadTestFormatError) as caught:
        parse_loadtest(json.dumps(raw))
    assert str(caught.value) == (
        "guidellm: benchmarks[2].metrics.request_latency: expected an object"
    )


def test_a_guidellm_report_without_benchmarks_is_refused(load):
    raw = load(GUIDELLM)
    raw["benchmarks"] = []
    with pytest.raises(LoadTestFormatError, match=r"^guidellm: benchmarks: the report holds no"):
        parse_loadtest(json.dumps(raw), format="guidellm")


def test_a_llmperf_value_that_is_not_a_number_names_its_key(load):
    raw = load(LLMPERF)
    raw["results_number_input_tokens_min"] = "n/a"
    with pytest.raises(LoadTestFormatError) as caught:
        parse_loadtest(json.dumps(raw))
    assert str(caught.value) == (
        "llmperf: results_number_input_tokens_min: expected a number, got 'n/a'"
    )


def test_a_negative_latency_is_refused(load):
    raw = load(LLMPERF)
    raw["results_ttft_s_quantiles_p99"] = -1.0
    with pytest.raises(LoadTestFormatError, match="results_ttft_s_quantiles_p99: expected a num"):
        parse_loadtest(json.dumps(raw))


def test_genai_perf_utilization_above_100_percent_is_refused(load):
    raw = load(GENAI_PERF)
    raw["telemetry_stats"]["gpu_utilization"]["gpu0"]["avg"] = 140.0
    with pytest.raises(LoadTestFormatError, match=r"telemetry_stats\.gpu_utilization: utilization"):
        parse_loadtest(json.dumps(raw))


def test_a_json_lines_file_is_refused_by_single_object_formats(read):
    with pytest.raises(LoadTestFormatError, match=r"^guidellm: expected one JSON object, found 7"):
        parse_loadtest(read(VLLM_SWEEP), format="guidellm")


def test_vllm_itls_that_repeat_the_ttft_first_do_not_count_the_prefill_twice(load):
    # vllm-project/vllm#7242: the completions client also appended the TTFT to `itls`.
    raw = load(VLLM_C16)
    raw.update(
        ttfts=[0.5, 0.4, 0.6],
        itls=[[0.5, 0.02, 0.02], [0.4, 0.01, 0.03], [0.6, 0.02, 0.02]],
        output_lens=[3, 3, 3],
        input_lens=[10, 10, 10],
        errors=["", "", ""],
    )
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.samples["e2e"] == pytest.approx([540, 440, 640])
    assert run.samples["itl"] == pytest.approx([20, 20, 10, 30, 20, 20])
