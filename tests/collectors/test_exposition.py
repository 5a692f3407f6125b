"""Parsing scrapes, windows between them, and the edge cases of the text format."""

import json

import pytest

from analysis.buckets import quantile, quantiles
from collectors.exposition import ExpositionError, dcgm, normalize_edge, parse, window

PAIR = "vllm/metrics-t0.prom -> metrics-t15.prom"
SENTINEL = "9223372036854775794"


@pytest.fixture
def read(fixtures_dir):
    return lambda name: (fixtures_dir / name).read_text()


@pytest.fixture
def expected(fixtures_dir) -> dict:
    return json.loads((fixtures_dir / "EXPECTED.json").read_text())


@pytest.fixture
def vllm_window(read):
    a = parse(read("vllm/metrics-t0.prom"), "vllm")
    b = parse(read("vllm/metrics-t15.prom"), "vllm")
    return window(a, b, 15.0)


@pytest.fixture
def gpus(read):
    return parse(read("dcgm/metrics.prom"), "dcgm").gpus


@pytest.fixture
def tgi(read):
    return parse(read("tgi/metrics.prom"), "tgi")


def histogram_text(name: str, les: list[str], counts: list[float], total_sum: float) -> str:
    lines = [f"# TYPE {name} histogram"]
    lines += [f'{name}_bucket{{le="{le}"}} {c}' for le, c in zip(les, counts, strict=True)]
    lines += [f"{name}_sum {total_sum}", f"{name}_count {counts[-1]}"]
    return "\n".join(lines) + "\n"


# --- the two vLLM scrapes ------------------------------------------------------------------


def test_two_vllm_scrapes_give_twelve_requests_per_second(vllm_window, expected):
    assert vllm_window.rates["requests_finished"] == pytest.approx(
        expected[PAIR]["requests_per_second"]
    )


def test_two_vllm_scrapes_count_the_requests_finished_between_them(vllm_window, expected):
    assert vllm_window.counters["requests_finished"] == expected[PAIR]["requests_completed"]


def test_two_vllm_scrapes_give_the_generation_token_rate(vllm_window, expected):
    assert vllm_window.rates["generation_tokens"] == pytest.approx(
        expected[PAIR]["generation_tokens_per_second"], rel=1e-12
    )


def test_two_vllm_scrapes_give_the_prompt_token_rate(vllm_window, expected):
    assert vllm_window.rates["prompt_tokens"] == pytest.approx(
        expected[PAIR]["prompt_tokens_per_second"], rel=1e-12
    )


@pytest.mark.parametrize(
    ("short", "canonical"),
    [("ttft", "ttft_seconds"), ("itl", "itl_seconds"), ("e2e", "e2e_seconds")],
)
def test_bucket_quantiles_match_the_expected_interpolation(vllm_window, expected, short, canonical):
    want = expected[PAIR]["bucket_interpolated_quantiles_seconds"][short]
    got = {str(p.q): p.value for p in quantiles(vllm_window.histograms[canonical])}
    assert got == pytest.approx(want, rel=1e-9)


def test_the_window_p99_ttft_rests_on_the_180_requests_between_scrapes(vllm_window):
    assert quantile(vllm_window.histograms["ttft_seconds"], 0.99).count == 180


def test_each_window_quantile_is_bounded_by_its_bucket(vllm_window, expected):
    true = expected[PAIR]["true_quantiles_seconds"]["e2e"]["0.5"]
    p50 = quantile(vllm_window.histograms["e2e_seconds"], 0.5)
    assert p50.lower <= true <= p50.upper


def test_the_queue_time_histogram_is_windowed_too(vllm_window):
    assert vllm_window.histograms["queue_seconds"].count == 180


def test_gauges_are_read_at_the_later_scrape(vllm_window, expected):
    at_b = expected[PAIR]["gauges_at_b"]
    assert vllm_window.gauges == {
        "requests_running": at_b["num_requests_running"],
        "requests_waiting": at_b["num_requests_waiting"],
        "kv_cache_usage": at_b["kv_cache_usage"],
    }


def test_no_reset_is_detected_between_the_fixture_scrapes(vllm_window, expected):
    assert vllm_window.reset_detected is expected[PAIR]["counter_reset_between_scrapes"]


# --- windows: restarts, new series, monotonicity --------------------------------------------


def test_a_counter_that_went_down_counts_its_new_value_as_the_delta():
    before = parse("vllm:prompt_tokens_total 5000\n", "vllm")
    after = parse("vllm:prompt_tokens_total 300\n", "vllm")
    w = window(before, after, 10.0)
    assert (w.counters["prompt_tokens"], w.rates["prompt_tokens"]) == (300, 30)


def test_a_counter_that_went_down_is_reported_as_a_reset():
    before = parse("vllm:prompt_tokens_total 5000\n", "vllm")
    after = parse("vllm:prompt_tokens_total 300\n", "vllm")
    assert window(before, after, 10.0).reset_detected


def test_series_are_summed_only_after_each_took_its_own_delta():
    # engine 0 restarted (100 -> 40: 40 new), engine 1 did not (100 -> 130: 30 new)
    before = parse(
        'vllm:request_success_total{engine="0"} 100\nvllm:request_success_total{engine="1"} 100\n',
        "vllm",
    )
    after = parse(
        'vllm:request_success_total{engine="0"} 40\nvllm:request_success_total{engine="1"} 130\n',
        "vllm",
    )
    assert window(before, after, 1.0).counters["requests_finished"] == 70


def test_a_series_new_in_the_later_scrape_counts_from_zero():
    before = parse('vllm:request_success_total{finished_reason="stop"} 10\n', "vllm")
    after = parse(
        'vllm:request_success_total{finished_reason="stop"} 12\n'
        'vllm:request_success_total{finished_reason="length"} 1\n',
        "vllm",
    )
    assert window(before, after, 1.0).counters["requests_finished"] == 3


def test_a_histogram_that_went_down_counts_its_new_buckets_as_the_delta():
    name = "vllm:time_to_first_token_seconds"
    before = parse(histogram_text(name, ["0.1", "1.0", "+Inf"], [50, 90, 100], 30.0), "vllm")
    after = parse(histogram_text(name, ["0.1", "1.0", "+Inf"], [3, 4, 4], 1.5), "vllm")
    w = window(before, after, 5.0)
    assert (w.histograms["ttft_seconds"].counts, w.reset_detected) == ((3, 1, 0), True)


def test_a_histogram_whose_buckets_changed_is_treated_as_restarted():
    name = "vllm:time_to_first_token_seconds"
    before = parse(histogram_text(name, ["0.1", "1.0", "+Inf"], [50, 90, 100], 30.0), "vllm")
    after = parse(histogram_text(name, ["0.2", "1.0", "+Inf"], [50, 95, 105], 31.0), "vllm")
    assert window(before, after, 5.0).histograms["ttft_seconds"].count == 105


def test_histogram_deltas_are_made_monotonic_across_le():
    # A scrape that raced an observation: le=1.0 was read before le=0.1 was incremented.
    name = "vllm:e2e_request_latency_seconds"
    before = parse(histogram_text(name, ["0.1", "1.0", "+Inf"], [10, 20, 20], 5.0), "vllm")
    after = parse(histogram_text(name, ["0.1", "1.0", "+Inf"], [13, 22, 22], 5.5), "vllm")
    assert window(before, after, 1.0).histograms["e2e_seconds"].counts == (3, 0, 0)


def test_histogram_series_are_summed_per_le_after_their_deltas():
    name = "vllm:e2e_request_latency_seconds"

    def scrape(zero, one):
        rows = []
        for engine, counts in (("0", zero), ("1", one)):
            rows += [
                f'{name}_bucket{{engine="{engine}",le="{le}"}} {c}'
                for le, c in zip(["1.0", "+Inf"], counts, strict=True)
            ]
        return parse(f"# TYPE {name} histogram\n" + "\n".join(rows) + "\n", "vllm")

    w = window(scrape([5, 5], [1, 2]), scrape([7, 8], [1, 4]), 1.0)
    assert w.histograms["e2e_seconds"].counts == (2, 3)


def test_a_window_with_no_requests_has_an_empty_histogram_not_a_missing_one(vllm_t0_parsed):
    w = window(vllm_t0_parsed, vllm_t0_parsed, 15.0)
    assert w.histograms["ttft_seconds"].count == 0


@pytest.fixture
def vllm_t0_parsed(read):
    return parse(read("vllm/metrics-t0.prom"), "vllm")


def test_a_window_must_have_a_positive_length(vllm_t0_parsed):
    with pytest.raises(ValueError, match="seconds"):
        window(vllm_t0_parsed, vllm_t0_parsed, 0)


def test_a_window_across_two_sources_is_refused(vllm_t0_parsed, tgi):
    with pytest.raises(ValueError, match="tgi"):
        window(vllm_t0_parsed, tgi, 15.0)


# --- DCGM ------------------------------------------------------------------------------------


def test_the_dcgm_fixture_gives_two_gpus(gpus, expected):
    assert len(gpus) == expected["dcgm/metrics.prom"]["gpus"]


def test_every_dcgm_gpu_is_on_the_expected_host(gpus, expected):
    assert {g["hostname"] for g in gpus} == {expected["dcgm/metrics.prom"]["host"]}


def test_gpu0_readings_match_the_expected_values(gpus, expected):
    want = expected["dcgm/metrics.prom"]["gpu0"]
    assert {k: gpus[0][k] for k in want} == pytest.approx(want)


def test_gpu0_memory_is_in_whole_bytes(gpus):
    assert gpus[0]["mem_used_bytes"] == 74120 * 1024 * 1024


def test_gpu_total_memory_is_used_plus_free(gpus):
    assert gpus[0]["mem_total_bytes"] == (74120 + 7439) * 1024 * 1024


def test_gpu_identity_comes_from_the_labels(gpus):
    assert (gpus[1]["index"], gpus[1]["uuid"], gpus[1]["name"]) == (
        1,
        "GPU-00000001-5d1c-4f2e-9a7b-0c0000000001",
        "NVIDIA H100 80GB HBM3",
    )


def test_a_field_the_exporter_does_not_send_is_none_not_zero(gpus):
    assert gpus[0]["sm_occupancy"] is None


def test_the_memory_temp_blank_sentinel_becomes_no_reading(gpus):
    readings = [v for g in gpus for v in g.values() if isinstance(v, float | int)]
    assert max(readings) < 9.2e18


def blanked(text: str, field_of_gpu0: str, value: str) -> str:
    return "\n".join(
        line.rsplit(" ", 1)[0] + " " + value if line.startswith(field_of_gpu0) else line
        for line in text.splitlines()
    )


def test_a_blank_sentinel_on_a_mapped_field_is_none(read):
    text = blanked(read("dcgm/metrics.prom"), 'DCGM_FI_DEV_GPU_TEMP{gpu="0"', SENTINEL)
    assert parse(text, "dcgm").gpus[0]["temp_c"] is None


@pytest.mark.parametrize(
    "field, value",
    [
        ("DCGM_FI_DEV_POWER_USAGE", "140737488355330"),  # fp64 "not supported"
        ("DCGM_FI_PROF_SM_ACTIVE", "140737488355328.0"),  # fp64 blank (H100, DCGM 3.3)
        ("DCGM_FI_DEV_SM_CLOCK", "2147483634"),  # int32 "not supported"
        ("DCGM_FI_DEV_GPU_UTIL", "4294967295"),  # NVML's "no reading" (NVIDIA/DCGM#199)
    ],
)
def test_dcgms_other_sentinels_are_no_reading_not_a_refused_scrape(read, field, value):
    key = dcgm.FIELDS[field][0]
    gpus = parse(blanked(read("dcgm/metrics.prom"), f'{field}{{gpu="0"', value), "dcgm").gpus
    assert (gpus[0][key], gpus[1][key] is not None) == (None, True)


def test_a_power_reading_past_any_gpus_is_still_refused(read):
    text = blanked(read("dcgm/metrics.prom"), 'DCGM_FI_DEV_POWER_USAGE{gpu="0"', "350000")
    with pytest.raises(ExpositionError, match="power_w"):
        parse(text, "dcgm")


def test_a_lowercase_hostname_label_is_accepted(read):
    text = read("dcgm/metrics.prom").replace('Hostname="', 'hostname="')
    assert parse(text, "dcgm").gpus[0]["hostname"] == "gpu-node-07"


def test_dcgm_fields_not_mapped_are_ignored_and_counted(read):
    # MEM_CLOCK, TOTAL_ENERGY_CONSUMPTION, XID_ERRORS, GR_ENGINE_ACTIVE, PIPE_TENSOR_ACTIVE,
    # MEMORY_TEMP: six fields on two GPUs
    assert parse(read("dcgm/metrics.prom"), "dcgm").ignored == 12


def test_a_dcgm_field_without_a_gpu_label_is_ignored_and_counted():
    # DataDog's dcgm fixture carries such lines: no GPU to put them on, and no phantom GPU.
    text = (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",modelName="Tesla T4",Hostname="h"} 12\n'
        "# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n"
        "DCGM_FI_PROF_SM_ACTIVE 0.5\n"
    )
    parsed = parse(text, "dcgm")
    assert ([g["sm_active"] for g in parsed.gpus], parsed.ignored) == ([None], 1)


# --- TGI -------------------------------------------------------------------------------------


def test_tgi_counts_the_requests_that_succeeded(tgi, expected):
    assert tgi.counter_total("requests_finished") == expected["tgi/metrics.prom"]["requests"]


def test_tgi_generated_tokens_come_from_the_histogram_sum(tgi, expected):
    want = expected["tgi/metrics.prom"]["generated_tokens"]
    assert tgi.counter_total("generation_tokens") == want


def test_tgi_e2e_p99_is_bucket_bounded_around_the_true_p99(tgi, expected):
    p99 = quantile(tgi.histogram("e2e_seconds"), 0.99)
    assert p99.lower <= expected["tgi/metrics.prom"]["e2e_p99_true"] <= p99.upper


def test_tgi_overloaded_requests_are_errors_and_refused_bad_ones_are_not(tgi):
    # err="overloaded" 1 (the service turned it away), err="validation" 2 (the client's 422s).
    assert tgi.counter_total("request_errors") == 1


def test_tgi_has_no_ttft_histogram(tgi):
    assert tgi.histogram("ttft_seconds") is None


def test_tgi_float_noise_edges_are_normalized(tgi):
    assert tgi.histogram("e2e_seconds").edges[:2] == (0.00015, 0.000225)


def test_tgi_gauges_map_to_running_and_waiting(tgi):
    assert tgi.gauges == {"requests_running": 24, "requests_waiting": 7}


# --- malformed text ----------------------------------------------------------------------------


def test_malformed_labels_give_an_error_naming_the_line():
    text = "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n" + (
        'vllm:num_requests_waiting{engine="0 4\n'
    )
    with pytest.raises(ExpositionError) as caught:
        parse(text, "vllm")
    assert caught.value.line == 3


def test_the_error_message_starts_with_the_line_number():
    with pytest.raises(ExpositionError, match=r"^line 2: "):
        parse("vllm:num_requests_running 3\nvllm:num_requests_waiting abc\n", "vllm")


def test_an_error_is_a_value_error():
    with pytest.raises(ValueError):
        parse("vllm:num_requests_running three\n", "vllm")


def test_an_invalid_type_line_is_found_even_though_the_parser_fails_later():
    text = "# TYPE a nonsense\na 1\n# TYPE b gauge\nb 2\n"
    with pytest.raises(ExpositionError) as caught:
        parse(text, "vllm")
    assert caught.value.line == 1


def test_a_bucket_with_a_non_numeric_le_names_its_line():
    text = histogram_text("vllm:time_to_first_token_seconds", ["0.1", "soon", "+Inf"], [1, 2, 3], 1)
    with pytest.raises(ExpositionError, match="le='soon'") as caught:
        parse(text, "vllm")
    assert caught.value.line == 3


def test_a_duplicate_series_names_its_second_line():
    text = "vllm:num_requests_running 3\nvllm:num_requests_waiting 1\nvllm:num_requests_running 4\n"
    with pytest.raises(ExpositionError, match="duplicate") as caught:
        parse(text, "vllm")
    assert caught.value.line == 3


def test_a_histogram_without_inf_bucket_or_count_is_malformed():
    text = (
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        'vllm:e2e_request_latency_seconds_bucket{le="1.0"} 4\n'
        "vllm:e2e_request_latency_seconds_sum 2.0\n"
    )
    with pytest.raises(ExpositionError, match=r"\+Inf") as caught:
        parse(text, "vllm")
    assert caught.value.line == 2


def test_an_unknown_source_is_refused():
    with pytest.raises(ValueError, match="source"):
        parse("", "ollama")


# --- edge cases of the text format -------------------------------------------------------------


def test_escaped_label_values_are_unescaped_into_the_series_labels():
    text = 'vllm:num_requests_running{model_name="a\\"b\\\\c\\nd"} 2\n'
    (key,) = parse(text, "vllm").gauge_series
    assert key == ("requests_running", (("model_name", 'a"b\\c\nd'),))


def test_a_nan_counter_is_dropped_and_counted_invalid():
    scrape = parse("vllm:prompt_tokens_total NaN\nvllm:generation_tokens_total 5\n", "vllm")
    assert (scrape.counter_total("prompt_tokens"), scrape.invalid) == (None, 1)


def test_infinite_gauges_are_dropped():
    text = "vllm:num_requests_running +Inf\nvllm:num_requests_waiting -Inf\n"
    assert parse(text, "vllm").gauges == {}


def test_a_plus_inf_le_is_the_overflow_bucket_not_an_edge():
    text = histogram_text("vllm:e2e_request_latency_seconds", ["1.0", "+Inf"], [1, 3], 9.0)
    bc = parse(text, "vllm").histogram("e2e_seconds")
    assert (bc.edges, bc.counts) == ((1.0,), (1, 2))


def test_normalize_edge_removes_float_noise():
    assert normalize_edge("0.0010000000000000002") == 0.001


def test_float_noise_in_le_does_not_break_a_window():
    name = "tgi_request_duration"
    before = parse(histogram_text(name, ["0.1", "+Inf"], [1, 2], 1.0), "tgi")
    after = parse(histogram_text(name, ["0.10000000000000002", "+Inf"], [4, 6], 3.0), "tgi")
    w = window(before, after, 1.0)
    assert (w.histograms["e2e_seconds"].counts, w.reset_detected) == ((3, 1), False)


def test_a_histogram_without_type_line_is_read_like_a_typed_one():
    typed = histogram_text("vllm:e2e_request_latency_seconds", ["1.0", "+Inf"], [1, 3], 9.0)
    untyped = "\n".join(line for line in typed.splitlines() if not line.startswith("#"))
    assert parse(untyped, "vllm").histograms == parse(typed, "vllm").histograms


def test_a_counter_without_type_or_total_suffix_is_read():
    assert parse("tgi_request_success 7\n", "tgi").counter_total("requests_finished") == 7


def test_a_typed_counter_without_total_suffix_is_read():
    text = "# TYPE tgi_request_success counter\ntgi_request_success 7\n"
    assert parse(text, "tgi").counter_total("requests_finished") == 7


def test_an_untyped_counter_with_total_suffix_is_read():
    assert parse("vllm:prompt_tokens_total 7\n", "vllm").counter_total("prompt_tokens") == 7


def test_created_timestamps_are_ignored(read):
    scrape = parse(read("vllm/metrics-t0.prom"), "vllm")
    assert (scrape.counter_total("prompt_tokens"), scrape.ignored) == (3596792, 2)


def test_blank_lines_and_comments_are_skipped():
    text = "\n# just a comment\n\nvllm:num_requests_running 2\n\n"
    assert parse(text, "vllm").gauges == {"requests_running": 2}


def test_an_empty_scrape_parses_to_nothing():
    scrape = parse("", "vllm")
    assert (scrape.counters, scrape.histograms, scrape.gauges) == ({}, {}, {})
