"""MLPerf Inference LoadGen summaries (format `mlperf`), read from published MLCommons results
(tests/fixtures/real/mlperf, SOURCES.md). Expected values read by hand from the files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.importing import import_loadtest_files
from tests.loadtests.test_real_corpus import check
from tests.support import tarred

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "mlperf"
SERVER = FOLDER / "mlcommons-v4.1-amd-8xmi300x-llama2-70b-99-server-mlperf_log_summary.txt"
OFFLINE = FOLDER / "mlcommons-v4.1-amd-8xmi300x-llama2-70b-99-offline-mlperf_log_summary.txt"
GPTJ = FOLDER / "mlcommons-v4.1-nvidia-gh200-gptj-99.9-server-mlperf_log_summary.txt"
SINGLE = FOLDER / "mlcommons-v4.1-nvidia-orin-gptj-99-singlestream-mlperf_log_summary.txt"


def read(path: Path, text: str | None = None):
    (run,) = parse_loadtest(text if text is not None else path.read_bytes(), filename=path.name)
    return run


def test_a_server_run_is_an_open_loop_at_loadgens_target_rate():
    run = read(SERVER)
    assert run.format == "mlperf"
    check(
        run,
        request_rate=73.5,
        request_rate_inf=False,
        concurrency=None,
        qps=71.74,
        output_tps=21028.23,
        errors=None,
        measured_at=None,  # the summary has no date: the importer gives it
    )
    assert run.label == "MLPerf Server 73.5 req/s"


def test_latencies_in_nanoseconds_become_ms_and_99_90_is_p999():
    run = read(SERVER)
    check(
        run,
        e2e_p50_ms=37054678257 / 1e6,
        e2e_p999_ms=179752985275 / 1e6,
        ttft_p99_ms=1604171041 / 1e6,
        tpot_p50_ms=143943044 / 1e6,
        tpot_p999_ms=203573466 / 1e6,
    )
    assert run.sources["ttft_p99_ms"] == "99.00 percentile first token latency (ns) (ns -> ms)"


def test_the_slo_the_submission_was_held_to_is_kept():
    assert read(SERVER).extra["latency_targets"] == {"ttft_ms": 2000.0, "tpot_ms": 200.0}


def test_an_offline_run_is_a_burst_of_its_samples():
    run = read(OFFLINE)
    check(run, concurrency=52800, request_rate_inf=True, request_count=52800, qps=80.15)
    assert run.fields["duration_s"] == pytest.approx(52800 / 80.15)
    assert any("wait behind the others" in note for note in run.extra["notes"])


def test_a_single_stream_run_is_concurrency_1_with_its_query_count():
    run = read(SINGLE)
    check(run, concurrency=1, request_rate_inf=True, request_count=13368, qps=0.36)
    assert run.label == "MLPerf SingleStream c=1"


def test_a_benchmark_without_token_latencies_has_e2e_only_and_says_its_tokens_are_inferred():
    run = read(GPTJ)
    check(run, ttft_p50_ms=None, tpot_p50_ms=None, e2e_p99_ms=9381228789 / 1e6)
    assert run.fields["output_tps"] == 2513.38
    assert any("inferred the token rate" in note for note in run.extra["notes"])


def test_an_invalid_result_says_which_condition_failed():
    """The real Server summary with LoadGen's verdict as it words an overloaded run."""
    text = SERVER.read_text().replace("Result is : VALID", "Result is : INVALID")
    text = text.replace(
        "Performance constraints satisfied : Yes", "Performance constraints satisfied : NO"
    )
    run = read(SERVER, text)
    assert run.extra["conditions_not_met"] == ["Performance constraints satisfied"]
    assert any(note.startswith("LoadGen judged the run INVALID") for note in run.extra["notes"])


def test_an_accuracy_run_is_refused_naming_the_file_to_import():
    text = SERVER.read_text().replace("PerformanceOnly", "AccuracyOnly")
    with pytest.raises(LoadTestFormatError, match=r"AccuracyOnly run.*performance/run_1"):
        read(SERVER, text)


def test_a_value_that_is_not_a_number_is_refused_naming_its_line():
    text = SERVER.read_text().replace("target_qps : 73.5", "target_qps : lots")
    with pytest.raises(LoadTestFormatError, match=r"line 58: 'target_qps': expected a number"):
        read(SERVER, text)


def test_a_summary_cut_before_its_latencies_is_refused():
    text = SERVER.read_text().partition("Additional Stats")[0]
    with pytest.raises(LoadTestFormatError, match="no latency percentiles"):
        read(SERVER, text)


def submission() -> bytes:
    """A published run folder as MLCommons lays it out: the summary beside LoadGen's detail log,
    and the accuracy run's files."""
    run = "closed/AMD/results/8xMI300X/llama2-70b-99/Server"
    members = {
        f"{run}/performance/run_1/mlperf_log_summary.txt": SERVER.read_bytes(),
        f"{run}/performance/run_1/mlperf_log_detail.txt": b':::MLLOG {"key": "loadgen_version"}\n',
        f"{run}/accuracy/accuracy.txt": b"{'ROUGE1': 44.4}\n",
        f"{run}/accuracy/mlperf_log_accuracy.json": b"[]",
        f"{run}/accuracy/mlperf_log_detail.txt": b"",
        "closed/AMD/measurements/8xMI300X/llama2-70b-99/Server/user.conf": b"*.target_qps = 73\n",
    }
    return tarred(members, gz=True)


@pytest.mark.django_db
def test_a_published_submission_folder_imports_its_performance_run(service):
    (run,) = import_loadtest_files(service=service, files=[(submission(), "amd.tar.gz")])
    assert run.source_name.endswith("performance/run_1/mlperf_log_summary.txt")
    assert run.format == "mlperf"
    assert run.date_known is False  # no date in the summary, none given


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_summary_with_one_value_changed_is_read_or_refused_saying_why(data):
    lines = SERVER.read_text().splitlines()
    valued = [i for i, line in enumerate(lines) if ":" in line]
    index = data.draw(st.sampled_from(valued))
    key = lines[index].partition(":")[0]
    lines[index] = f"{key}: {data.draw(st.text(max_size=20))}"
    try:
        read(SERVER, "\n".join(lines))
    except LoadTestFormatError as exc:
        assert str(exc)
