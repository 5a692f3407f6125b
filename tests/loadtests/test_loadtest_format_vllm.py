"""Load-test parsers: `vllm bench serve` files (one run, and a JSON-lines sweep), read back in
ms / s / tokens/s as the fixture files write them.
"""

import json
from datetime import UTC, datetime

import pytest

from loadtests.formats import parse_loadtest
from tests.loadtests.format_files import VLLM_C16, VLLM_SWEEP, only, sweep_lines


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
    # Its lines have per-request `ttfts` but no `itls`: only TTFT's other percentiles can be
    # computed (test_real_corpus), E2E's and TPOT's stay missing.
    lines = [json.loads(line) for line in sweep_lines(read)]
    for run, line in zip(parse_loadtest(read(VLLM_SWEEP)), lines, strict=True):
        for metric, key in (("e2e", "e2el"), ("ttft", "ttft"), ("tpot", "tpot")):
            assert run.fields[f"{metric}_p50_ms"] == line[f"median_{key}_ms"]
            if metric != "ttft":
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


def test_an_old_vllm_file_without_max_concurrency_at_an_unlimited_rate_is_a_burst(load):
    # Every request sent at once: all `num_prompts` of them in flight at the start.
    raw = load(VLLM_C16)
    for key in ("max_concurrency", "failed", "date"):
        del raw[key]
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.fields["concurrency"] == raw["num_prompts"]
    assert "burst" in run.sources["concurrency"]
    assert run.measured_at is None


def test_a_rate_run_without_max_concurrency_has_no_concurrency(load):
    raw = load(VLLM_C16)
    del raw["max_concurrency"]
    raw["request_rate"] = 4.0
    run = only(parse_loadtest(json.dumps(raw)))
    assert run.fields["concurrency"] is None


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
