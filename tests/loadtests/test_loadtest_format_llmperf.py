"""Load-test parsers: llmperf summaries, read back in ms / s / tokens/s."""

from datetime import UTC, datetime

import pytest

from loadtests.formats import parse_loadtest
from tests.loadtests.format_files import LLMPERF, only


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
