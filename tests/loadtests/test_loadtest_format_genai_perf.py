"""Load-test parsers: GenAI-Perf profile exports, read back in ms / s / tokens/s."""

import json

import pytest

from loadtests.formats import parse_loadtest
from tests.loadtests.format_files import GENAI_PERF, only
from tests.support import REAL


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


def test_genai_perf_run_that_did_not_stream_has_no_ttft_or_tpot(load):
    # GenAI-Perf writes a whole request's latency as time_to_first_token when not streaming.
    raw = load(GENAI_PERF)
    raw["input_config"]["streaming"] = False
    fields = only(parse_loadtest(json.dumps(raw))).fields
    assert (fields["ttft_p99_ms"], fields["tpot_p99_ms"]) == (None, None)


def test_genai_perf_run_that_did_not_stream_keeps_its_request_latency(load):
    raw = load(GENAI_PERF)
    raw["input_config"]["streaming"] = False
    fields = only(parse_loadtest(json.dumps(raw))).fields
    assert fields["e2e_p50_ms"] == pytest.approx(5829.305414011333)


def test_genai_perf_derived_duration_is_count_over_throughput(read):
    run = only(parse_loadtest(read(GENAI_PERF)))
    assert run.fields["duration_s"] == pytest.approx(500 / 6.2)
    assert "derived" in run.sources["duration_s"]


def test_aiperf_telemetry_data_gives_utilization_of_the_gpus_in_use():
    # AIPerf's JSON keeps GPU telemetry as telemetry_data.endpoints.<url>.gpus.<key>.metrics
    # (its TelemetryExportData model); the run made here had no DCGM endpoint, so it is added.
    path = REAL / "genai-perf" / "e2e-aiperf-0.13.0-c2-profile_export_aiperf.json"
    data = json.loads(path.read_text())

    def gpu(index, util, memory):
        return {
            "gpu_index": index,
            "gpu_name": "NVIDIA H100",
            "gpu_uuid": f"GPU-{index}",
            "metrics": {
                "nvidia_gpu_utilization": {"unit": "%", "avg": util},
                "nvidia_memory_used": {"unit": "GB", "avg": memory},
            },
        }

    data["telemetry_data"]["endpoints"] = {
        "http://localhost:9400/metrics": {
            "gpus": {"gpu0": gpu(0, 81.0, 70.0), "gpu1": gpu(1, 0.0, 0.0)}
        }
    }
    (run,) = parse_loadtest(json.dumps(data))
    assert run.fields["gpu_util"] == pytest.approx(0.81)
    assert run.sources["gpu_util"].startswith("telemetry_data nvidia_gpu_utilization")
