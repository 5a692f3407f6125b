"""One run written to two files (GenAI-Perf's and AIPerf's .json and .csv) is stored once: the
second file is refused, naming the run already stored (analysis.twins)."""

import gzip
import itertools
from datetime import UTC, datetime, timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from analysis.twins import same_clock, same_measurement
from loadtests.formats import TWIN_FIGURES
from loadtests.importing import (
    LOCAL_TIME_NOTE,
    LoadTestImportError,
    import_loadtest_file,
    parse_file,
    prepare_files,
)
from loadtests.models import LoadTest
from tests.loadtests.test_console_summary import BLOCK  # a printed vLLM summary
from tests.loadtests.test_real_corpus import LOADTEST_FILES, REAL, REFUSED, content_of

pytestmark = pytest.mark.django_db

GENAI_PERF = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "genai-perf"
GP_C2 = "e2e-genai-perf-0.0.8-c2-profile_export_genai_perf"
AIPERF_C2 = "e2e-aiperf-0.13.0-c2-profile_export_aiperf"
IPERF_ONE_STAGE = "e2e-inference-perf-0.7.0-no-stream-context-errors-"


def fields(name: str) -> dict:
    return parse_file((GENAI_PERF / name).read_bytes(), filename=name)[0].fields


def store(service, name: str) -> list[LoadTest]:
    content = (GENAI_PERF / name).read_bytes()
    return import_loadtest_file(service=service, content=content, filename=name)


def test_the_csv_and_json_of_one_genai_perf_run_are_one_measurement():
    assert same_measurement(fields(f"{GP_C2}.csv"), fields(f"{GP_C2}.json"))


def test_two_runs_of_one_setup_are_two_measurements():
    """GenAI-Perf at concurrency 1, then 2, on the same engine and model."""
    c1 = fields("e2e-genai-perf-0.0.8-c1-profile_export_genai_perf.json")
    assert same_measurement(c1, fields(f"{GP_C2}.json")) is None


def test_figures_a_hundredth_of_a_millisecond_apart_on_one_percentile_are_two_runs():
    json_run = fields(f"{GP_C2}.json")
    other = {**json_run, "ttft_p90_ms": json_run["ttft_p90_ms"] + 0.02}
    assert same_measurement(other, json_run) is None


def test_the_same_figures_measured_at_another_time_are_another_run():
    json_run = fields(f"{AIPERF_C2}.json")
    when = parse_file((GENAI_PERF / f"{AIPERF_C2}.json").read_bytes())[0].measured_at
    assert same_measurement(json_run, json_run, when, when)
    assert same_measurement(json_run, json_run, when, when + timedelta(seconds=1)) is None


def test_the_csv_after_its_json_is_refused_naming_the_stored_run(service):
    (stored,) = store(service, f"{GP_C2}.json")
    with pytest.raises(LoadTestImportError, match=rf"already stored as run #{stored.pk} "):
        store(service, f"{GP_C2}.csv")
    assert LoadTest.objects.count() == 1


def test_the_json_after_its_csv_is_the_run_stored_and_dates_it(service):
    # The CSV has no time: the JSON of the same run is not stored again, it dates the run
    # (test_dating_a_stored_run.py).
    (stored,) = store(service, f"{AIPERF_C2}.csv")
    (run,) = store(service, f"{AIPERF_C2}.json")
    assert (run.pk, run.just_created, run.date_known) == (stored.pk, False, True)
    assert LoadTest.objects.count() == 1


def test_a_one_stage_inference_perf_summary_after_its_stage_file_is_refused(service):
    # One stage: inference-perf's summary of the run and its stage report are the same requests.
    folder = GENAI_PERF.parent / "inference-perf"
    stage, summary = (
        (folder / f"{IPERF_ONE_STAGE}{kind}_lifecycle_metrics.json").read_bytes()
        for kind in ("stage_0", "summary")
    )
    (stored,) = import_loadtest_file(service=service, content=stage, filename="stage_0.json")
    with pytest.raises(LoadTestImportError, match=f"already stored as run #{stored.pk}"):
        import_loadtest_file(service=service, content=summary, filename="summary.json")


def test_the_same_run_on_another_service_is_stored(service, make_service):
    store(service, f"{GP_C2}.json")
    (run,) = store(make_service("chat-13b"), f"{GP_C2}.csv")
    assert run.just_created


def test_the_api_answers_400_naming_the_stored_run(owner, service):
    store(service, f"{GP_C2}.json")
    client = APIClient()
    client.force_login(owner)
    body = (GENAI_PERF / f"{GP_C2}.csv").read_bytes()
    url = f"/api/v1/services/{service.slug}/loadtests/"
    response = client.post(url, body, content_type="text/csv")
    assert response.status_code == 400
    assert "is the measurement already stored as run #" in response.json()["detail"]


def test_the_command_exits_2_naming_the_stored_run(service):
    store(service, f"{AIPERF_C2}.json")
    with pytest.raises(CommandError, match="already stored") as refused:
        call_command(
            "import_loadtest", str(GENAI_PERF / f"{AIPERF_C2}.csv"), "--service", service.slug,
            stdout=StringIO(),
        )  # fmt: skip
    assert refused.value.returncode == 2


# Runs of the real corpus written twice by their tool, as (file, file) name pairs: the only pairs
# the twin check may match. Every other pair of runs from two files is two measurements.
KNOWN_PAIRS = {
    ("e2e-sglang-0.5.23-console.log", "e2e-sglang-0.5.23-rate-sweep.jsonl"),
    (
        "e2e-vllm-0.32.0-cpu-rate40-c2-client-queue-console-twin.json",
        "e2e-vllm-0.32.0-rate40-c2-client-queue-console.log",
    ),
    (
        "e2e-vllm-0.34.0-client-c4-rate12-console.log",
        "e2e-vllm-0.34.0-client-c4-rate12-server-timings-detailed.json",
    ),
    (f"{AIPERF_C2}.csv", f"{AIPERF_C2}.json"),
    (f"{GP_C2}.csv", f"{GP_C2}.json"),
    ("guidellm-repo-0.2-benchmarks_stripped.json", "guidellm-repo-0.2-benchmarks_stripped.yaml"),
    *(
        (
            f"e2e-guidellm-0.8.1-csv-{name}-benchmarks.csv",
            f"e2e-guidellm-0.8.1-csv-{name}-benchmarks.json",
        )
        for name in ("concurrent-2-4", "constant-4", "synchronous", "tz-berlin-concurrent-2")
    ),
    (
        f"{IPERF_ONE_STAGE}stage_0_lifecycle_metrics.json",
        f"{IPERF_ONE_STAGE}summary_lifecycle_metrics.json",
    ),
}


def local(run) -> bool:
    """Whether the run's time is a zone-less local time read as UTC (the import allows for it)."""
    return LOCAL_TIME_NOTE in str(run.sources.get("measured_at", ""))


def corpus_runs() -> list:
    """(file name, parsed run) for every run of the real corpus that did not fail."""
    runs = []
    for path in LOADTEST_FILES:
        if path.name in REFUSED:
            continue
        name = path.name.removesuffix(".gz")
        for parsed in parse_file(content_of(path), filename=name):
            if not parsed.failed:
                runs.append((name, parsed))
    # Formats whose run is a folder: evalscope's, as archives and as folders.
    folder = REAL / "evalscope"
    uploads = [(p.read_bytes(), p.name) for p in folder.iterdir() if p.is_file()]
    uploads += [(f.read_bytes(), f"{f.parent.name}/{f.name}") for f in folder.glob("*/*.json")]
    for content, name in prepare_files(uploads):
        runs += [(name, parsed) for parsed in parse_file(content, filename=name)]
    return runs


def test_across_the_real_corpus_only_files_of_one_run_are_one_measurement():
    """The check's false-alarm rate on real files: no pair of separate runs matches."""
    runs = corpus_runs()
    matched = {
        tuple(sorted((a_name, b_name)))
        for (a_name, a), (b_name, b) in itertools.combinations(runs, 2)
        if a_name != b_name
        and same_measurement(
            a.fields, b.fields, a.measured_at, b.measured_at, zone_unknown=local(a) or local(b)
        )
    }
    assert len(runs) >= 60  # the corpus, not an empty glob
    assert sum(parsed.format == "evalscope" for _, parsed in runs) == 9
    assert matched == KNOWN_PAIRS


GP_C1 = "e2e-genai-perf-0.0.8-c1-profile_export"


def test_genai_perfs_per_request_figures_pair_it_with_its_summary_and_no_other_run():
    """The summary GenAI-Perf computes from a per-request file, computed here the same way,
    matches that run's summary and none of the corpus's other runs (the summary has no time,
    so the clock cannot pair them)."""
    runs = corpus_runs()
    views = [(name, run.extra[TWIN_FIGURES]) for name, run in runs if TWIN_FIGURES in run.extra]
    matched = {
        (view_name, name)
        for view_name, view in views
        for name, run in runs
        if name != view_name and same_measurement(view, run.fields)
    }
    assert len(views) == 10  # every load level of the five per-request files
    assert matched == {(f"{GP_C1}.json", f"{GP_C1}_genai_perf.json")}


def test_genai_perfs_per_request_file_after_its_summary_is_the_run_stored(service):
    # The summary has no time: the per-request file dates it (test_dating_a_stored_run.py)
    # rather than being refused, and the run is stored once.
    (stored,) = store(service, f"{GP_C1}_genai_perf.json")
    content = gzip.decompress((GENAI_PERF / f"{GP_C1}.json.gz").read_bytes())
    (run,) = import_loadtest_file(service=service, content=content, filename="profile_export.json")
    assert (run.pk, run.just_created) == (stored.pk, False)
    assert LoadTest.objects.count() == 1


def test_genai_perfs_summary_after_its_per_request_file_is_refused(service):
    content = gzip.decompress((GENAI_PERF / f"{GP_C1}.json.gz").read_bytes())
    import_loadtest_file(service=service, content=content, filename="profile_export.json")
    with pytest.raises(LoadTestImportError, match="as GenAI-Perf computes its summary"):
        store(service, f"{GP_C1}_genai_perf.json")
    assert LoadTest.objects.count() == 1


def test_a_block_pasted_twice_into_one_document_is_refused_naming_both_runs(service):
    text = "vllm bench serve --request-rate 4\n" + BLOCK
    content = (text + "\n" + text).encode()
    with pytest.raises(LoadTestImportError, match="run 2 repeats run 1 of this file"):
        import_loadtest_file(service=service, content=content, filename="README.md")


def test_two_blocks_of_one_document_that_differ_are_both_stored(service):
    other = BLOCK.replace("100.89", "101.40")
    content = ("vllm bench serve --request-rate 4\n" + BLOCK + "\n" + other).encode()
    stored = import_loadtest_file(service=service, content=content, filename="README.md")
    assert len(stored) == 2


AIPERF_RECORDS = REAL / "aiperf-records" / "e2e-aiperf-0.13.0-c2-profile_export.jsonl"


def test_aiperfs_per_request_file_of_a_stored_summary_is_refused_by_its_clock(service):
    # Computed apart, their percentiles differ beyond rounding (E2E P50 499.8 and 485.0 ms);
    # their starts are 17 ms apart, their durations 0.8 ms of 10.7 s, 40 requests each.
    store(service, f"{AIPERF_C2}.json")
    with pytest.raises(LoadTestImportError, match="the same start to 50 ms"):
        import_loadtest_file(
            service=service, content=AIPERF_RECORDS.read_bytes(), filename="profile_export.jsonl"
        )


def test_runs_timed_only_to_the_second_are_never_one_run_by_their_clock():
    start = datetime(2026, 12, 7, 12, 0, 0, tzinfo=UTC)
    run = {"duration_s": 10.0, "request_count": 40}
    assert not same_clock(run, run, start, start)
    assert same_clock(run, run, start.replace(microsecond=1), start.replace(microsecond=2))
