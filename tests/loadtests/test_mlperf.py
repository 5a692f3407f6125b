"""MLPerf Inference LoadGen summaries (format `mlperf`), read from published MLCommons results
(tests/fixtures/real/mlperf, SOURCES.md). Expected values read by hand from the files."""

from __future__ import annotations

import tarfile
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.importing import (
    LoadTestImportError,
    import_loadtest_files,
    parse_file,
    prepare_files,
)
from loadtests.models import LoadTest
from tests.loadtests.test_real_corpus import check
from tests.support import tarred

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "mlperf"
SERVER = FOLDER / "mlcommons-v4.1-amd-8xmi300x-llama2-70b-99-server-mlperf_log_summary.txt"
OFFLINE = FOLDER / "mlcommons-v4.1-amd-8xmi300x-llama2-70b-99-offline-mlperf_log_summary.txt"
GPTJ = FOLDER / "mlcommons-v4.1-nvidia-gh200-gptj-99.9-server-mlperf_log_summary.txt"
SINGLE = FOLDER / "mlcommons-v4.1-nvidia-orin-gptj-99-singlestream-mlperf_log_summary.txt"
# Made here: LoadGen 6.0.17 driving the CPU vLLM (SOURCES.md), each with its detail log.
SERVER_RUN = FOLDER / "e2e-loadgen-6.0.17-server-valid.tar.gz"
OFFLINE_RUN = FOLDER / "e2e-loadgen-6.0.17-offline-valid.tar.gz"
INVALID = FOLDER / "e2e-loadgen-6.0.17-server-invalid-mlperf_log_summary.txt"


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


def test_an_invalid_result_says_which_condition_failed_and_what_loadgen_advised():
    run = read(INVALID)
    assert run.extra["result"] == "INVALID"
    assert run.extra["conditions_not_met"] == ["Early stopping satisfied"]
    (note,) = run.extra["notes"]
    assert note.startswith("LoadGen judged the run INVALID: early stopping satisfied: no")
    assert "Processed 178 queries" in note


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


def pair(archive: Path) -> dict[str, bytes]:
    """A LoadGen run's summary and detail log, as LoadGen wrote them."""
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def accuracy_log(performance: dict[str, bytes]) -> bytes:
    """The accuracy run's detail log: LoadGen run again in AccuracyOnly mode."""
    return performance["mlperf_log_detail.txt"].replace(b'"PerformanceOnly"', b'"AccuracyOnly"')


def submission() -> bytes:
    """A run folder laid out as MLCommons publishes one: the performance run's summary beside
    LoadGen's detail log and trace, and the accuracy run's files."""
    run = "closed/PerfHub/results/cpu-vllm/tiny-llama/Server"
    performance = pair(SERVER_RUN)
    members = {f"{run}/performance/run_1/{name}": data for name, data in performance.items()}
    members |= {
        f"{run}/performance/run_1/mlperf_log_trace.json": b"[]",
        f"{run}/accuracy/accuracy.txt": b"{'ROUGE1': 44.4}\n",
        f"{run}/accuracy/mlperf_log_accuracy.json": b"[]",
        f"{run}/accuracy/mlperf_log_detail.txt": accuracy_log(performance),
        "closed/PerfHub/measurements/cpu-vllm/tiny-llama/Server/user.conf": b"*.target_qps = 6\n",
    }
    return tarred(members, gz=True)


@pytest.mark.django_db
def test_a_submission_folder_imports_its_performance_run_with_the_detail_logs_date(service):
    (run,) = import_loadtest_files(service=service, files=[(submission(), "run.tar.gz")])
    assert run.source_name.endswith("performance/run_1/mlperf_log_summary.txt")
    assert run.date_known
    assert run.measured_at == datetime(2026, 12, 6, 5, 34, 13, tzinfo=UTC)


def test_the_accuracy_runs_detail_log_is_skipped_and_named():
    files = prepare_files([(submission(), "run.tar.gz")])
    assert [name for _, name in files] == [
        "run.tar.gz/closed/PerfHub/results/cpu-vllm/tiny-llama/Server/performance/run_1/"
        "mlperf_log_summary.txt"
    ]
    assert any(name.endswith("accuracy/mlperf_log_detail.txt") for name in files.skipped)


def runs_of(archive: Path):
    return [
        r
        for c, n in prepare_files([(archive.read_bytes(), archive.name)])
        for r in parse_file(c, filename=n)
    ]


def test_the_detail_log_gives_the_date_loadgens_version_and_the_request_count():
    (run,) = runs_of(SERVER_RUN)
    check(run, request_count=535, request_rate=6.0, tool_version="LoadGen 6.0.17")
    assert run.measured_at == datetime(2026, 12, 6, 5, 34, 13, tzinfo=UTC)
    assert run.sources["request_count"] == "mlperf_log_detail.txt result_query_count"
    assert run.fields["duration_s"] == pytest.approx(535 / 5.91)


def test_an_offline_runs_count_is_its_one_query_of_samples():
    (run,) = runs_of(OFFLINE_RUN)
    check(run, request_count=1210, concurrency=1210)


def detail_alone(archive: Path, text: bytes | None = None):
    """The run read from LoadGen's detail log uploaded without its summary."""
    content = text if text is not None else pair(archive)["mlperf_log_detail.txt"]
    files = prepare_files([(content, "mlperf_log_detail.txt")])
    return [run for c, n in files for run in parse_file(c, filename=n)]


def with_summary(archive: Path):
    (run,) = runs_of(archive)
    return run


LATENCIES = [f"{m}_{p}_ms" for m in ("e2e", "ttft", "tpot") for p in ("p50", "p90", "p99", "p999")]


def test_a_detail_log_alone_gives_the_summarys_latency_percentiles():
    (alone,) = detail_alone(SERVER_RUN)
    summary = with_summary(SERVER_RUN)
    assert [alone.fields[f] for f in LATENCIES] == [summary.fields[f] for f in LATENCIES]


def test_a_detail_log_alone_gives_the_rates_unrounded():
    """The summary prints 5.91 samples/s; the detail log's event holds 5.90538."""
    (alone,) = detail_alone(SERVER_RUN)
    check(alone, qps=5.90538, output_tps=177.504, request_rate=6.0, request_count=535)


def test_a_detail_log_alone_gives_the_date_and_loadgens_version():
    (alone,) = detail_alone(SERVER_RUN)
    assert (alone.measured_at, alone.tool_version) == (
        datetime(2026, 12, 6, 5, 34, 13, tzinfo=UTC),
        "LoadGen 6.0.17",
    )


def test_an_offline_detail_log_alone_is_its_one_query_of_samples():
    (alone,) = detail_alone(OFFLINE_RUN)
    check(alone, concurrency=1210, request_count=1210, qps=107.08, output_tps=2702.75)


def test_a_detail_log_alone_keeps_loadgens_verdict_and_slo():
    (alone,) = detail_alone(SERVER_RUN)
    assert (alone.extra["result"], alone.extra["latency_targets"]) == (
        "VALID",
        {"ttft_ms": 2000.0, "tpot_ms": 200.0, "latency_ms": 100.0},
    )


@pytest.mark.django_db
def test_a_detail_log_alone_then_with_its_summary_is_one_run(service):
    import_loadtest_files(
        service=service,
        files=[(pair(SERVER_RUN)["mlperf_log_detail.txt"], "mlperf_log_detail.txt")],
    )
    with pytest.raises(LoadTestImportError, match="already stored"):
        import_loadtest_files(service=service, files=[(SERVER_RUN.read_bytes(), SERVER_RUN.name)])


def test_an_accuracy_runs_detail_log_alone_is_refused_saying_so():
    with pytest.raises(LoadTestImportError, match="AccuracyOnly run: it measures no latency"):
        detail_alone(SERVER_RUN, accuracy_log(pair(SERVER_RUN)))


def test_a_bad_event_in_a_detail_log_alone_is_named_with_its_line():
    log = pair(SERVER_RUN)["mlperf_log_detail.txt"].decode().splitlines()
    index = next(i for i, line in enumerate(log) if '"effective_target_qps"' in line)
    log[index] = ':::MLLOG {"key": "effective_target_qps", "value": "six"}'
    with pytest.raises(
        LoadTestImportError,
        match=rf"line {index + 1}: 'effective_target_qps': expected a number, got 'six'",
    ):
        detail_alone(SERVER_RUN, "\n".join(log).encode())


def test_a_detail_log_of_another_scenario_is_refused():
    files = [
        (pair(SERVER_RUN)["mlperf_log_summary.txt"], "mlperf_log_summary.txt"),
        (pair(OFFLINE_RUN)["mlperf_log_detail.txt"], "mlperf_log_detail.txt"),
    ]
    with pytest.raises(LoadTestImportError, match=r"'Offline' where mlperf_log_summary\.txt says"):
        [parse_file(c, filename=n) for c, n in prepare_files(files)]


@pytest.mark.django_db
def test_the_summary_alone_then_with_its_detail_log_is_one_run_dated_by_the_log(service):
    files = pair(SERVER_RUN)
    import_loadtest_files(
        service=service, files=[(files["mlperf_log_summary.txt"], "mlperf_log_summary.txt")]
    )
    import_loadtest_files(service=service, files=[(SERVER_RUN.read_bytes(), SERVER_RUN.name)])
    (run,) = LoadTest.objects.filter(service=service)
    assert run.date_known  # the summary alone has no time; its detail log gave the start


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


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_detail_log_with_one_line_changed_is_read_or_refused_saying_why(data):
    files = pair(SERVER_RUN)
    lines = files["mlperf_log_detail.txt"].decode().splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    lines[index] = data.draw(
        st.sampled_from([":::MLLOG ", ':::MLLOG {"key": "test_datetime", "value": ', ""])
    ) + data.draw(st.text(max_size=30))
    upload = [
        (files["mlperf_log_summary.txt"], "mlperf_log_summary.txt"),
        ("\n".join(lines).encode(), "mlperf_log_detail.txt"),
    ]
    try:
        runs = [run for c, n in prepare_files(upload) for run in parse_file(c, filename=n)]
    except LoadTestImportError as exc:
        assert "mlperf" in str(exc)
    else:
        assert len(runs) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_detail_log_alone_with_one_line_changed_is_read_or_refused_saying_why(data):
    lines = pair(SERVER_RUN)["mlperf_log_detail.txt"].decode().splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    key = lines[index].partition('"value": ')[0]
    lines[index] = (
        key
        + '"value": '
        + data.draw(st.sampled_from(['"', "", "null}", "true}", "-1}", '"x"}', "1e400}"]))
        + data.draw(st.text(max_size=20))
    )
    try:
        runs = detail_alone(SERVER_RUN, "\n".join(lines).encode())
    except LoadTestImportError as exc:
        assert "mlperf" in str(exc)
    else:
        assert len(runs) == 1
