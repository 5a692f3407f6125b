"""llm-d benchmark reports (format `llm-d-report`), read from reports llm-d-benchmark's own
converter wrote from real harness output (tests/fixtures/real/SOURCES.md)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from django.urls import reverse

from analysis.twins import same_measurement
from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.formats.archives import arranged
from loadtests.importing import LoadTestImportError, import_loadtest_files
from loadtests.sweeps import sweeps_for_service
from tests.loadtests.test_real_corpus import LOADTEST_FILES, REFUSED, check, content_of
from tests.support import tarred, zipped

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
REPORTS = REAL / "llm-d-report"
GUIDELLM = REPORTS / "e2e-guidellm-0.8.1-concurrent-sweep"
IPERF_RATE = REPORTS / "e2e-inference-perf-0.7.0-rate"
IPERF_CONC = REPORTS / "e2e-inference-perf-0.7.0-concurrent"
VLLM = REPORTS / "er0080-vllm-0.25.1-max_num_seqs4"
NO_STREAM = "e2e-inference-perf-0.7.0-no-stream-context-errors"
V02 = "benchmark_report_v0.2,_"
# A serving stack as llm-d's reports describe one (the schema's example, abridged).
STACK = [
    {"metadata": {"label": "vllm-0"}, "standardized": {
        "kind": "inference_engine", "tool": "vllm", "role": "decode", "replicas": 2,
        "model": {"name": "Qwen/Qwen3-0.6B"},
        "accelerator": {"model": "NVIDIA-H100-80GB-HBM3", "count": 8},
    }}
]  # fmt: skip


def report(folder: Path, name: str):
    (run,) = parse_loadtest((folder / name).read_bytes(), filename=name)
    return run


def test_a_vllm_report_is_a_closed_loop_run_at_its_concurrency():
    run = report(VLLM, f"{V02}run=0.json.yaml")
    assert run.format == "llm-d-report"
    check(
        run,
        concurrency=2,
        request_rate_inf=True,
        request_count=8,
        errors=0,
        qps=5.859229976904171,
        ttft_p99_ms=762.4942294094944,
        tpot_p50_ms=8.323490332986694,
        e2e_p99_ms=876.8009717071254,
    )
    assert run.label == "llm-d report (vllm-benchmark stage 0) c=2"


def test_a_report_without_a_start_is_dated_by_its_end_and_says_so():
    run = report(VLLM, f"{V02}run=0.json.yaml")
    assert run.measured_at == datetime(2026, 8, 18, 2, 13, 33, tzinfo=UTC)
    assert "end" in run.sources["measured_at"]


def test_a_version_0_1_vllm_report_takes_its_load_from_vllms_arguments():
    run = report(VLLM, "benchmark_report,_run=0.json.yaml")
    check(run, concurrency=2, request_count=8, errors=None, tpot_p50_ms=8.323490332986694)
    assert run.sources["concurrency"] == "scenario.load.args.max_concurrency"
    assert run.measured_at == datetime.fromtimestamp(1787019213.0, tz=UTC)


def test_guidellms_report_takes_its_inter_token_latency_as_tpot():
    """guidellm's time_per_output_token counts the first token in (its P50 here is 9.15 ms)."""
    run = report(GUIDELLM, f"{V02}benchmarks.json_1.yaml")
    check(run, concurrency=4, tpot_p50_ms=8.813261985778809, tpot_p99_ms=10.561756789684296)
    assert "inter_token_latency" in run.sources["tpot_p50_ms"]
    assert any("first token included" in note for note in run.extra["notes"])


def test_a_throughput_is_the_total_over_the_duration_not_a_mean_of_instantaneous_rates():
    run = report(GUIDELLM, f"{V02}benchmarks.json_1.yaml")
    # The report's output_token_rate is a distribution (max 7,700 tokens/s); 60 requests of
    # 32.47 tokens in 4.167 s is 467.4 tokens/s. The report's ISO duration is read to the
    # microsecond (a timedelta's resolution).
    duration = 4.167417526245117
    assert run.fields["duration_s"] == pytest.approx(duration, abs=1e-6)
    assert run.fields["qps"] == pytest.approx(60 / duration, rel=1e-6)
    assert run.fields["output_tps"] == pytest.approx(60 * 32.46666666666667 / duration, rel=1e-6)


def test_a_version_0_1_guidellm_report_names_no_load_and_joins_no_sweep():
    run = report(GUIDELLM, "benchmark_report,_benchmarks.json_1.yaml")
    check(run, concurrency=None, request_rate=None, request_count=60)
    assert any("joins no sweep" in note for note in run.extra["notes"])


def test_an_inference_perf_rate_stage_is_an_open_loop_run_at_its_rate():
    run = report(IPERF_RATE, f"{V02}stage_1_lifecycle_metrics.json.yaml")
    check(run, request_rate=3.0, concurrency=None, request_rate_inf=False, request_count=60)
    assert run.label == "llm-d report (inference-perf stage 1) 3 req/s"
    assert run.tool_version == "0.7.0"


def test_an_inference_perf_concurrent_stage_ignores_the_rate_it_writes():
    """inference-perf writes a concurrent stage's request count (60) as its rate."""
    run = report(IPERF_CONC, f"{V02}stage_1_lifecycle_metrics.json.yaml")
    check(run, concurrency=8, request_rate=None, request_rate_inf=True)


def test_a_run_that_did_not_stream_counts_its_failures_and_has_no_ttft():
    folder = REPORTS / NO_STREAM
    run = report(folder, f"{V02}stage_0_lifecycle_metrics.json.yaml")
    check(run, request_count=17, errors=3, ttft_p50_ms=None, tpot_p50_ms=None)
    assert run.fields["e2e_p50_ms"] is not None
    assert any("did not stream" in note for note in run.extra["notes"])


def test_a_prompt_length_the_converter_wrote_as_0_is_not_known():
    run = report(IPERF_CONC, "benchmark_report,_stage_1_lifecycle_metrics.json.yaml")
    check(run, prompt_tokens_mean=None)
    assert any("input_length.mean is 0" in note for note in run.extra["notes"])


def test_aiperfs_report_takes_its_inter_token_latency_as_tpot():
    folder = REPORTS / "e2e-aiperf-0.13.0-c2"
    run = report(folder, f"{V02}profile_export_aiperf.json.yaml")
    native = parse_loadtest(
        (REAL / "genai-perf/e2e-aiperf-0.13.0-c2-profile_export_aiperf.json").read_bytes()
    )
    assert run.fields["tpot_p99_ms"] == pytest.approx(native[0].fields["tpot_p99_ms"])


def test_aiperfs_count_of_error_kinds_is_not_taken_for_failed_requests():
    folder = REPORTS / "e2e-aiperf-0.13.0-c2"
    data = yaml.safe_load((folder / f"{V02}profile_export_aiperf.json.yaml").read_text())
    data["results"]["request_performance"]["aggregate"]["requests"]["failures"] = 2
    (run,) = parse_loadtest(yaml.safe_dump(data))
    check(run, errors=None, request_count=40)
    assert any("kinds of error" in note for note in run.extra["notes"])


def test_the_serving_stack_is_kept_for_display():
    data = yaml.safe_load((VLLM / f"{V02}run=0.json.yaml").read_text())
    data["scenario"]["stack"] = STACK
    (run,) = parse_loadtest(yaml.safe_dump(data))
    (engine,) = run.extra["stack"]
    assert (engine["model"], engine["accelerator"], engine["accelerator_count"]) == (
        "Qwen/Qwen3-0.6B",
        "NVIDIA-H100-80GB-HBM3",
        8,
    )


def v02(**changes) -> str:
    data = yaml.safe_load((VLLM / f"{V02}run=0.json.yaml").read_text())
    for path, value in changes.items():
        holder = data
        *steps, last = path.split("__")
        for step in steps:
            holder = holder[step]
        holder[last] = value
    return yaml.safe_dump(data)


def test_a_session_report_is_refused_naming_the_request_report_to_import():
    content = v02(results={"session_performance": {"sessions": {"total": 3}}})
    with pytest.raises(LoadTestFormatError, match=r"session report.*stage_<N>_lifecycle"):
        parse_loadtest(content, format="llm-d-report")


def test_an_unknown_latency_unit_is_refused_naming_the_statistic():
    latency = "results__request_performance__aggregate__latency__time_to_first_token__units"
    with pytest.raises(LoadTestFormatError, match=r"time_to_first_token\.units.*'minutes'"):
        parse_loadtest(v02(**{latency: "minutes"}))


def test_an_unknown_report_version_is_refused_naming_the_ones_read():
    with pytest.raises(LoadTestFormatError, match=r"version.*0\.9.*0\.1, 0\.2, 0\.2\.1"):
        parse_loadtest(v02(version="0.9"), format="llm-d-report")


def test_more_failures_than_requests_is_refused():
    requests = "results__request_performance__aggregate__requests__failures"
    with pytest.raises(LoadTestFormatError, match=r"failures \(9\).*exceed total \(8\)"):
        parse_loadtest(v02(**{requests: 9}))


def test_a_bad_iso_duration_is_refused_naming_it():
    with pytest.raises(LoadTestFormatError, match=r"run\.time\.duration.*ISO 8601"):
        parse_loadtest(v02(run__time={"duration": "49 seconds"}))


def test_an_iso_duration_in_hours_and_minutes_is_read_as_seconds():
    run = parse_loadtest(v02(run__time={"duration": " PT1H2M3.5S "}))[0]
    assert run.fields["duration_s"] == pytest.approx(3723.5)


@pytest.mark.parametrize("duration", ["-PT5S", "P1Y", "P1M", "P99999999999D", ["PT5S"]])
def test_a_negative_or_calendar_iso_duration_is_refused_naming_it(duration):
    """A year or a month has no fixed length in seconds; a run cannot last less than nothing,
    nor longer than a timedelta holds; a list is no duration."""
    with pytest.raises(LoadTestFormatError, match=r"run\.time\.duration"):
        parse_loadtest(v02(run__time={"duration": duration}))


# -- results folders ----------------------------------------------------------------------------


def names(files):
    return sorted(name for _, name in arranged([(b"", n) for n in files]))


def test_a_folder_reads_the_harness_file_where_its_reports_are_beside_it():
    folder = [
        "t1/stage_0_lifecycle_metrics.json",
        f"t1/{V02}stage_0_lifecycle_metrics.json.yaml",
        "t1/benchmark_report,_stage_0_lifecycle_metrics.json.yaml",
        "t1/benchmarks.json",
        f"t1/{V02}benchmarks.json_0.yaml",
        f"t1/{V02}benchmarks.json_1.yaml",
    ]
    assert names(folder) == ["t1/benchmarks.json", "t1/stage_0_lifecycle_metrics.json"]


def test_a_folder_of_reports_alone_reads_the_newer_version_of_each():
    folder = [
        f"t1/{V02}stage_0_lifecycle_metrics.json.yaml",
        "t1/benchmark_report,_stage_0_lifecycle_metrics.json.yaml",
        "t1/benchmark_report,_stage_1_lifecycle_metrics.json.yaml",
    ]
    assert names(folder) == [
        "t1/benchmark_report,_stage_1_lifecycle_metrics.json.yaml",
        f"t1/{V02}stage_0_lifecycle_metrics.json.yaml",
    ]


# -- one measurement, two files -----------------------------------------------------------------

# Each report and the harness file it was converted from (run index in that file): the only
# runs of the corpus it may be taken for.
CONVERTED_FROM = (
    {
        f"e2e-guidellm-0.8.1-concurrent-sweep/{V02}benchmarks.json_{i}.yaml": {
            ("e2e-guidellm-0.8.1-concurrent-sweep-benchmarks.json", i)
        }
        for i in range(3)
    }
    | {
        "e2e-guidellm-0.8.1-concurrent-sweep/benchmark_report,_benchmarks.json_1.yaml": {
            ("e2e-guidellm-0.8.1-concurrent-sweep-benchmarks.json", 1)
        },
        f"e2e-aiperf-0.13.0-c2/{V02}profile_export_aiperf.json.yaml": {
            ("e2e-aiperf-0.13.0-c2-profile_export_aiperf.json", 0),
            ("e2e-aiperf-0.13.0-c2-profile_export_aiperf.csv", 0),  # the JSON's CSV twin
        },
        f"{NO_STREAM}/{V02}stage_0_lifecycle_metrics.json.yaml": {
            (f"{NO_STREAM}-stage_0_lifecycle_metrics.json", 0),
            (f"{NO_STREAM}-summary_lifecycle_metrics.json", 0),  # one stage: the same requests
        },
        f"er0080-vllm-0.25.1-max_num_seqs4/{V02}run=0.json.yaml": {
            ("er0080-sweep-max_num_seqs4-run0.json", 0)
        },
        "er0080-vllm-0.25.1-max_num_seqs4/benchmark_report,_run=0.json.yaml": {
            ("er0080-sweep-max_num_seqs4-run0.json", 0)
        },
        f"e2e-vllm-0.32.0-c4/{V02}c4.json.yaml": {
            ("e2e-vllm-0.32.0-cpu-c4-128-32-llmd-harness.json", 0)
        },
    }
    | {
        f"e2e-inference-perf-0.7.0-rate/{V02}stage_{s}_lifecycle_metrics.json.yaml": {
            (f"e2e-inference-perf-0.7.0-rate-stage_{s}_lifecycle_metrics.json", 0)
        }
        for s in range(3)
    }
    | {
        f"e2e-inference-perf-0.7.0-concurrent/{V02}stage_{s}_lifecycle_metrics.json.yaml": {
            (f"e2e-inference-perf-0.7.0-concurrent-stage_{s}_lifecycle_metrics.json", 0)
        }
        for s in range(2)
    }
    | {
        f"{IPERF_CONC.name}/benchmark_report,_stage_1_lifecycle_metrics.json.yaml": {
            ("e2e-inference-perf-0.7.0-concurrent-stage_1_lifecycle_metrics.json", 0)
        },
    }
)


def test_each_report_is_one_measurement_with_its_harness_file_and_no_other_run():
    """The twin check across the real corpus: a report imported beside its harness file is
    refused as the run already stored, and matches no run it was not converted from."""
    harness_runs = []
    for path in LOADTEST_FILES:
        if path.name not in REFUSED:
            name = path.name.removesuffix(".gz")
            for index, run in enumerate(parse_loadtest(content_of(path), filename=name)):
                if run.failure is None:
                    harness_runs.append(((name, index), run))
    reports = sorted(REPORTS.glob("*/*.yaml"))
    assert {f"{p.parent.name}/{p.name}" for p in reports} == set(CONVERTED_FROM)
    for path in reports:
        (run,) = parse_loadtest(path.read_bytes(), filename=path.name)
        matched = {
            key
            for key, other in harness_runs
            if same_measurement(run.fields, other.fields, run.measured_at, other.measured_at)
        }
        assert matched == CONVERTED_FROM[f"{path.parent.name}/{path.name}"], path.name


def test_no_two_reports_of_different_runs_are_taken_for_one():
    runs = [
        (p.name.removeprefix("benchmark_report").partition(",_")[2], p.parent.name, r)
        for p in sorted(REPORTS.glob("*/*.yaml"))
        for r in parse_loadtest(p.read_bytes(), filename=p.name)
    ]
    for (a_src, a_dir, a), (b_src, b_dir, b) in itertools.combinations(runs, 2):
        one_run = (a_src, a_dir) == (b_src, b_dir)
        same = same_measurement(a.fields, b.fields, a.measured_at, b.measured_at) is not None
        assert same == one_run, (a_dir, a_src, b_src)


# -- imported -----------------------------------------------------------------------------------


def treatment_folder() -> dict[str, bytes]:
    """An llm-d treatment folder as the harness leaves it: inference-perf's stage files, both
    reports of each, the per-request dump and raw metric scrapes."""
    folder = {}
    for stage in range(3):
        source = f"stage_{stage}_lifecycle_metrics.json"
        native = REAL / "inference-perf" / f"e2e-inference-perf-0.7.0-rate-{source}"
        folder[f"t1/{source}"] = native.read_bytes()
        folder[f"t1/{V02}{source}.yaml"] = (IPERF_RATE / f"{V02}{source}.yaml").read_bytes()
        folder[f"t1/benchmark_report,_{source}.yaml"] = (
            IPERF_RATE / f"{V02}{source}.yaml"
        ).read_bytes()  # the 0.1 report is not kept in the corpus; its place is what counts
    folder["t1/per_request_lifecycle_metrics.json"] = b"[]"
    folder["t1/metrics/raw/scrape_0.log"] = b"vllm:num_requests_running 1\n"
    return folder


@pytest.mark.django_db
def test_an_llmd_treatment_folder_stores_each_stage_once_from_the_harness_file(service):
    archive = tarred(treatment_folder(), gz=True)
    runs = import_loadtest_files(service=service, files=[(archive, "t1.tar.gz")])
    assert sorted(run.source_name for run in runs) == [
        f"t1.tar.gz/t1/stage_{n}_lifecycle_metrics.json" for n in range(3)
    ]
    assert {run.format for run in runs} == {"inference-perf"}


@pytest.mark.django_db
def test_a_folder_of_guidellm_reports_is_a_concurrency_sweep(service):
    archive = zipped({f"sweep/{p.name}": p.read_bytes() for p in GUIDELLM.glob(f"{V02}*")})
    import_loadtest_files(service=service, files=[(archive, "reports.zip")])
    (sweep,) = sweeps_for_service(service)
    assert (sweep.format, sweep.axis) == ("llm-d-report", "concurrency")
    assert [run.concurrency for run in sweep.runs] == [1, 4, 8]


@pytest.mark.django_db
def test_a_report_of_a_run_already_stored_from_its_harness_file_is_refused(service):
    native = REAL / "vllm-bench" / "er0080-sweep-max_num_seqs4-run0.json"
    import_loadtest_files(service=service, files=[(native.read_bytes(), native.name)])
    report_file = VLLM / f"{V02}run=0.json.yaml"
    with pytest.raises(LoadTestImportError, match="already stored"):
        import_loadtest_files(service=service, files=[(report_file.read_bytes(), report_file.name)])


@pytest.mark.django_db
def test_the_run_page_shows_the_serving_stack_the_report_names(owner_client, service):
    data = yaml.safe_load((VLLM / f"{V02}run=0.json.yaml").read_text())
    data["scenario"]["stack"] = STACK
    (run,) = import_loadtest_files(
        service=service, files=[(yaml.safe_dump(data).encode(), "r.yaml")]
    )
    page = owner_client.get(reverse("loadtests:detail", args=[service.slug, run.pk]))
    stack = page.content.decode().partition('id="serving-stack"')[2].partition("</section>")[0]
    assert "vllm-0" in stack
    assert "8 \u00d7 NVIDIA-H100-80GB-HBM3" in stack
    assert "Qwen/Qwen3-0.6B" in stack


def test_a_version_0_1_guidellm_report_takes_no_rate_mean_for_a_throughput():
    """0.1 writes guidellm's mean of instantaneous rates as a plain number."""
    data = yaml.safe_load((GUIDELLM / "benchmark_report,_benchmarks.json_1.yaml").read_text())
    data["metrics"]["throughput"]["requests_per_sec"] = 999.0
    (run,) = parse_loadtest(yaml.safe_dump(data))
    assert run.fields["qps"] == pytest.approx(60 / 4.167417526245117)
