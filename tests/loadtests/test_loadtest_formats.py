"""Load-test parsers, what holds for every format: each fixture file into its runs and the
measured-run columns, format detection, and bad files refused with clear messages.

Expected numbers are the fixture files' own, read back in ms / s / tokens/s. Each format's own
readings: test_loadtest_format_<format>.py.
"""

import json

import pytest

from dossiers.models import Baseline
from loadtests.formats import (
    FIELD_NAMES,
    LoadTestFormatError,
    format_names,
    parse_loadtest,
)
from tests.loadtests.format_files import (
    ALL_FIXTURES,
    GENAI_PERF,
    GUIDELLM,
    LLMPERF,
    VLLM_C16,
    VLLM_SWEEP,
    only,
    sweep_lines,
)

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
        parse_loadtest(b'{"model": "\xff\xfe"}')  # Latin-1 bytes, no byte-order mark


def test_a_file_with_a_utf16_mark_but_broken_text_is_refused():
    with pytest.raises(LoadTestFormatError, match="not UTF-16"):
        parse_loadtest(b"\xff\xfe{\x00\x00\xd8")  # a lone surrogate


def test_json_of_an_unknown_shape_lists_the_formats_expected():
    with pytest.raises(LoadTestFormatError) as caught:
        parse_loadtest(b'{"hello": "world"}')
    assert str(caught.value) == (
        "could not detect the format: expected one of " + ", ".join(format_names())
    )


def test_llmperfs_per_request_records_alone_are_told_to_bring_the_summary():
    # llmperf writes every request beside its summary: *_individual_responses.json.
    record = {"error_code": None, "error_msg": "", "inter_token_latency_s": 0.01, "ttft_s": 0.2,
              "end_to_end_latency_s": 2.1, "request_output_throughput_token_per_s": 60.0,
              "number_total_tokens": 650, "number_output_tokens": 128,
              "number_input_tokens": 522}  # fmt: skip
    with pytest.raises(LoadTestFormatError, match=r"per-request records.*\*_summary\.json"):
        parse_loadtest(json.dumps([record] * 3).encode())


def test_a_csv_of_unknown_columns_is_called_a_csv_with_its_header():
    # `genai-perf analyze` writes a sweep table that is none of the profile exports.
    text = "Config Name,Concurrency,ISL\nrun_0,32,200\nrun_1,32,200\n"
    with pytest.raises(LoadTestFormatError, match=r"a CSV .*Config Name,Concurrency,ISL"):
        parse_loadtest(text.encode())


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
