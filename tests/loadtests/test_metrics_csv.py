"""GenAI-Perf's and AIPerf's CSV export: the layouts each release writes, and bad rows named.

The real files (a published GenAI-Perf CSV, an AIPerf 0.13.0 CSV made here) are checked in
test_real_corpus.py; the layouts below are the ones GenAI-Perf's own exporter writes
(`genai_perf/export_data/csv_exporter.py` and its tests), which no published file here shows.
"""

import pytest

from loadtests.formats import LoadTestFormatError, parse_loadtest

VALUES = (
    "Metric,Value\r\n"
    "Output Token Throughput (per sec),900.00\r\n"
    "Request Throughput (per sec),200.00\r\n"
)


def parse(text: str):
    (run,) = parse_loadtest(text)
    return run


def test_early_genai_perf_layout_in_nanoseconds_with_num_token_rows():
    # GenAI-Perf's first releases: Triton in ns, "Num Output Token", CRLF line ends.
    run = parse(
        "Metric,avg,min,max,p99,p95,p90,p75,p50,p25\r\n"
        "Time To First Token (ns),2000000,1000000,3000000,3000000,2900000,2800000,2500000,"
        "2000000,1500000\r\n"
        "Request Latency (ns),8000000,7000000,9000000,9000000,8900000,8800000,8500000,8000000,"
        "7500000\r\n"
        "Num Output Token,4,3,5,5,5,5,4,4,4\r\n"
        "\r\n" + VALUES
    )
    assert (run.fields["ttft_p99_ms"], run.fields["e2e_p50_ms"]) == (3.0, 8.0)
    assert (run.fields["output_tokens_mean"], run.fields["qps"]) == (4, 200.0)


def test_genai_perf_gpu_telemetry_block_gives_utilization():
    run = parse(
        "Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1\n"
        "Request Latency (ms),8.00,7.00,9.00,8.98,8.90,8.80,8.50,8.00,7.50,7.2,7.1,7.0\n"
        "\n" + VALUES.replace("\r", "") + "\n"
        "Metric,GPU,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1\n"
        "GPU Utilization (%),gpu0,80.00,70,90,90,90,90,85,80,75,72,71,70\n"
        "GPU Utilization (%),gpu1,60.00,50,70,70,70,70,65,60,55,52,51,50\n"
        "\n"
        "Metric,GPU,Value\n"
        "Total GPU Memory (GB),gpu0,80.00\n"
    )
    assert run.fields["gpu_util"] == pytest.approx(0.70)


def test_a_cell_that_is_not_a_number_is_refused_naming_its_line_and_column():
    with pytest.raises(LoadTestFormatError, match=r"line 3: p99: expected a number, got 'fast'"):
        parse(
            "Metric,avg,p99\n"
            "Time To First Token (ms),1.0,2.0\n"
            "Request Latency (ms),3.0,fast\n\n" + VALUES
        )


def test_a_row_with_a_cell_missing_is_refused_naming_its_line():
    with pytest.raises(LoadTestFormatError, match=r"line 2: expected 3 cells"):
        parse("Metric,avg,p99\nRequest Latency (ms),3.0\n\n" + VALUES)


def test_na_cells_are_missing_figures_not_errors():
    run = parse("Metric,avg,p50,p99\nRequest Latency (ms),3.0,N/A,5.0\n\n" + VALUES)
    assert (run.fields["e2e_p50_ms"], run.fields["e2e_p99_ms"]) == (None, 5.0)


def test_a_csv_without_throughput_says_what_the_format_needs():
    with pytest.raises(LoadTestFormatError, match="request_throughput"):
        parse("Metric,avg,p99\nRequest Latency (ms),3.0,5.0\n")


def test_another_csv_is_not_taken_for_an_export():
    with pytest.raises(LoadTestFormatError, match="a CSV whose columns this importer does not"):
        parse("name,latency\nx,3\n")


def test_aiperf_gpu_telemetry_rows_give_utilization_of_the_gpus_in_use():
    # AIPerf's exporter (`metrics_csv_exporter.py`): two empty rows, then one row a GPU and
    # metric, named "NVIDIA GPU Utilization (%)"; GPU 1 holds no memory, so it served nothing.
    stats = "avg,min,max,sum,p1,p5,p10,p25,p50,p75,p90,p95,p99,std"
    gpu = "http://localhost:9400/metrics,{i},NVIDIA H100,GPU-{i},nvidia,{metric},{avg}" + ",1" * 13
    run = parse(
        f"Metric,{stats}\n"
        "Request Latency (ms),8.0,7.0,9.0,80.0,7.0,7.0,7.1,7.5,8.0,8.5,8.8,8.9,9.0,0.5\n"
        "\n" + VALUES.replace("\r", "") + "\n\n"
        f"Endpoint,GPU_Index,GPU_Name,GPU_UUID,Platform,Metric,{stats}\n"
        + gpu.format(i=0, metric="NVIDIA GPU Utilization (%)", avg="64.00")
        + "\n"
        + gpu.format(i=0, metric="NVIDIA GPU Memory Used (GB)", avg="70.00")
        + "\n"
        + gpu.format(i=1, metric="NVIDIA GPU Utilization (%)", avg="0.00")
        + "\n"
        + gpu.format(i=1, metric="NVIDIA GPU Memory Used (GB)", avg="0.00")
        + "\n"
    )
    assert run.fields["gpu_util"] == pytest.approx(0.64)
