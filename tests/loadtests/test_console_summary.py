"""A benchmark's printed summary, saved from the console, imports like its JSON file
(`loadtests.formats.console`). The block below is vLLM 0.32.0's, from
tests/fixtures/real/console/e2e-vllm-0.32.0-bench-serve-console.log; the command lines are
real ones (SGLang's from github.com/datacrunch-research/h200-benchmarks)."""

from __future__ import annotations

import pytest

from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.formats.console import summary_documents

BLOCK = """\
============ Serving Benchmark Result ============
Successful requests:                     200
Failed requests:                         0
Benchmark duration (s):                  50.18
Total input tokens:                      25623
Total generated tokens:                  6400
Request throughput (req/s):              3.99
Output token throughput (tok/s):         127.53
---------------Time to First Token----------------
Mean TTFT (ms):                          21.15
Median TTFT (ms):                        15.63
P99 TTFT (ms):                           100.89
-----Time per Output Token (excl. 1st token)------
Mean TPOT (ms):                          3.86
Median TPOT (ms):                        3.81
P99 TPOT (ms):                           6.93
==================================================
"""
SGLANG_COMMAND = (
    "python3 -m sglang.bench_serving --backend sglang --dataset-name random --random-input 1024"
    " --random-output 1024 --num-prompts 300 --request-rate 1 --output-file online.jsonl\n"
)


def test_the_command_line_says_what_the_run_was_told_abbreviated_options_included():
    (document,) = summary_documents(SGLANG_COMMAND + BLOCK)
    data = document.data
    assert (data["request_rate"], data["num_prompts"]) == (1, 300)
    assert (data["random_input_len"], data["random_output_len"]) == (1024, 1024)


def test_options_given_with_equals_signs_and_continuation_lines():
    command = "vllm bench serve --model m \\\n  --max-concurrency=16 \\\n  --request-rate=8\n"
    (run,) = parse_loadtest(command + BLOCK)
    assert (run.fields["concurrency"], run.fields["request_rate"]) == (16, 8.0)


def test_a_command_without_a_rate_ran_at_the_scripts_default_unlimited_rate():
    (run,) = parse_loadtest("python benchmark_serving.py --num-prompts 200\n" + BLOCK)
    assert run.request_rate_inf


def test_the_rate_the_script_printed_wins_over_the_command():
    text = "vllm bench serve --request-rate 8\nTraffic request rate: 4.0\n" + BLOCK
    (run,) = parse_loadtest(text)
    assert run.fields["request_rate"] == 4.0


def test_a_shell_variable_in_the_command_is_not_a_value_and_refuses_nothing():
    # A README's command as typed: `--num-prompts $prompts` is no number of prompts.
    command = "vllm bench serve --num-prompts $prompts --max-concurrency $c --request-rate 8\n"
    (run,) = parse_loadtest(command + BLOCK)
    assert (run.fields["request_count"], run.fields["request_rate"]) == (200, 8.0)


def test_a_command_for_fewer_prompts_than_the_block_counts_is_another_runs():
    # The block counts 200 requests: a command of 100 prompts did not make it (a document's
    # header command, say), so nothing of it is taken, not its unlimited rate either.
    (document,) = summary_documents("vllm bench serve --num-prompts 100\n" + BLOCK)
    assert "num_prompts" not in document.data and "request_rate" not in document.data


def test_a_command_for_as_many_prompts_as_the_block_counts_is_read():
    (document,) = summary_documents("vllm bench serve --num-prompts 200\n" + BLOCK)
    assert document.data["num_prompts"] == 200


def test_lines_behind_a_log_prefix_are_read():
    prefixed = "".join(
        f"INFO 12-03 13:49:01 [serve.py:712] {line}\n" for line in BLOCK.splitlines()
    )
    (run,) = parse_loadtest(prefixed)
    assert (run.fields["request_count"], run.fields["ttft_p99_ms"]) == (200, 100.89)


def test_each_block_of_a_log_is_a_run_even_one_cut_short():
    cut = BLOCK.split("-----Time per Output")[0]  # the log ends or moves on mid-block
    runs = parse_loadtest(cut + "vllm bench serve --request-rate 2\n" + BLOCK)
    assert [run.fields["request_rate"] for run in runs] == [None, 2.0]
    assert runs[0].fields["tpot_p99_ms"] is None


def test_a_block_without_its_duration_is_refused_naming_its_line():
    text = "some log line\n" + BLOCK.replace("Benchmark duration (s):                  50.18\n", "")
    with pytest.raises(LoadTestFormatError, match=r"vllm-bench: line 2: missing key 'duration'"):
        parse_loadtest(text)


def test_text_without_a_summary_block_is_still_told_it_is_not_json():
    with pytest.raises(LoadTestFormatError, match="not valid JSON"):
        parse_loadtest("Successful requests: 200\nBenchmark duration (s): 50.18\n")


def test_long_lines_are_not_read_so_an_upload_cannot_stall_a_worker():
    # The label pattern backtracks on a long line (10,000 characters cost ~0.4 s), so no line
    # longer than a summary's is matched, even one ending in a label.
    long_line = "~" * 600 + " Successful requests: 999\n"
    text = BLOCK.replace("Failed requests:", long_line + "Failed requests:")
    (run,) = parse_loadtest(("a " * 5_000 + "\n") * 5 + text)
    assert run.fields["request_count"] == 200
