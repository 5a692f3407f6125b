"""evalscope perf: a run is a folder of files (tests/fixtures/real/evalscope, made here with
evalscope 1.14.1 against the CPU vLLM; SOURCES.md). Expected values are read by hand from the
files' keys; latencies in ms."""

import io
import json
import math
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.importing import (
    LoadTestImportError,
    PromotionError,
    import_loadtest_files,
    parse_file,
    prepare_files,
)
from loadtests.models import LoadTest
from loadtests.sweeps import sweeps_for_service

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "evalscope"
CLOSED = FOLDER / "e2e-evalscope-1.14.1-closed-sweep.tar.gz"
OPEN = FOLDER / "e2e-evalscope-1.14.1-open-loop.zip"
TOO_LONG = FOLDER / "e2e-evalscope-1.14.1-too-long-c4"
NO_STREAM = FOLDER / "e2e-evalscope-1.14.1-no-stream-c2"
RUN_FILES = ("benchmark_summary.json", "benchmark_percentile.json", "benchmark_args.json")


def folder_files(folder: Path, names=RUN_FILES) -> list[tuple[bytes, str]]:
    """The run files as a browser uploads them: names without their folder."""
    return [((folder / name).read_bytes(), name) for name in names]


def names_of(files) -> list[str]:
    return [name for _, name in files]


def runs_in(files) -> list:
    return [
        run for content, name in prepare_files(files) for run in parse_file(content, filename=name)
    ]


def by_concurrency(runs) -> dict:
    return {run.fields["concurrency"]: run for run in runs}


def test_a_closed_loop_sweep_archive_is_one_run_per_concurrency():
    runs = runs_in([(CLOSED.read_bytes(), CLOSED.name)])
    assert sorted(by_concurrency(runs)) == [1, 4, 8]
    assert all(run.request_rate_inf and run.fields["request_rate"] is None for run in runs)


def test_a_runs_figures_are_its_summary_and_percentile_rows():
    c8 = by_concurrency(runs_in([(CLOSED.read_bytes(), CLOSED.name)]))[8]
    fields = c8.fields
    assert (fields["request_count"], c8.errors) == (80, 0)
    assert fields["qps"] == pytest.approx(52.0886)
    assert fields["output_tps"] == pytest.approx(1666.835)
    assert fields["input_tps"] == pytest.approx(5805.9248 - 1666.835)  # total - output
    assert fields["e2e_p50_ms"] == pytest.approx(144.1)  # 0.1441 s
    assert fields["e2e_p99_ms"] == pytest.approx(271.7)
    assert fields["ttft_p99_ms"] == pytest.approx(185.2945)
    assert fields["tpot_p95_ms"] == pytest.approx(7.1021)
    assert fields["e2e_p999_ms"] is None  # evalscope computes no P99.9


def test_each_figure_names_the_file_and_key_it_came_from():
    c8 = by_concurrency(runs_in([(CLOSED.read_bytes(), CLOSED.name)]))[8]
    assert c8.sources["request_count"] == "benchmark_summary.json 'Success Requests'"
    assert c8.sources["ttft_p99_ms"] == "benchmark_percentile.json 99% 'TTFT (ms)'"


def test_ttft_rows_of_zero_are_left_out_and_said():
    c8 = by_concurrency(runs_in([(CLOSED.read_bytes(), CLOSED.name)]))[8]
    assert c8.fields["ttft_p50_ms"] == pytest.approx(40.87)
    (note,) = c8.extra["notes"]
    assert "TTFT of 0" in note and "up to P10" in note


def test_an_open_loop_zip_is_one_run_per_rate():
    runs = runs_in([(OPEN.read_bytes(), OPEN.name)])
    assert sorted(run.fields["request_rate"] for run in runs) == [5.0, 20.0]
    assert all(run.fields["concurrency"] is None and not run.request_rate_inf for run in runs)
    assert sorted(run.label for run in runs) == ["evalscope 20 req/s", "evalscope 5 req/s"]


def test_failed_requests_are_errors_and_the_successes_are_the_count():
    (run,) = runs_in(folder_files(TOO_LONG))
    assert (run.fields["request_count"], run.errors) == (9, 11)
    assert run.extra["requests_sent"] == 20


def test_a_run_that_did_not_stream_has_no_ttft_or_tpot():
    (run,) = runs_in(folder_files(NO_STREAM))
    assert run.fields["e2e_p99_ms"] == pytest.approx(92.1)
    assert run.fields["ttft_p50_ms"] is None  # evalscope wrote the whole latency there
    assert run.fields["tpot_p99_ms"] is None
    assert "did not stream" in run.extra["notes"][0]


def test_the_summary_alone_is_refused_naming_the_file_to_add():
    with pytest.raises(LoadTestImportError, match=r"together with benchmark_percentile\.json"):
        parse_file((TOO_LONG / "benchmark_summary.json").read_bytes())


def test_the_percentile_table_alone_is_refused_naming_the_file_to_add():
    with pytest.raises(LoadTestImportError, match=r"together with benchmark_summary\.json"):
        parse_file((TOO_LONG / "benchmark_percentile.json").read_bytes())


def test_a_folder_is_the_same_file_however_it_arrives():
    """Joined to canonical JSON: an archive's folder and the same files uploaded alone are one
    digest, so the second import finds the first."""
    (from_upload,) = prepare_files(folder_files(TOO_LONG))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        archive.add(TOO_LONG, arcname="too-long/parallel_4_number_20")
    (from_archive,) = prepare_files([(buf.getvalue(), "too-long.tar")])
    assert from_upload[0] == from_archive[0]
    assert from_archive[1] == "too-long.tar/too-long/parallel_4_number_20"


def test_summary_keys_before_1_5_are_read(tmp_path):
    """evalscope before 1.5 named the summary's keys in words and its TTFT and TPOT in seconds
    (its Metrics and PercentileMetrics then); the same run written that way reads the same."""
    renamed = {
        "Test Duration (s)": "Time taken for tests (s)",
        "Concurrency": "Number of concurrency",
        "Success Requests": "Succeed requests",
        "Failed Requests": "Failed requests",
        "Total Requests": "Total requests",
        "Req Throughput (req/s)": "Request throughput (req/s)",
        "Output Throughput (tok/s)": "Output token throughput (tok/s)",
        "Total Throughput (tok/s)": "Total token throughput (tok/s)",
    }
    summary = json.loads((TOO_LONG / "benchmark_summary.json").read_text())
    old_summary = {renamed[k]: v for k, v in summary.items() if k in renamed}
    rows = json.loads((TOO_LONG / "benchmark_percentile.json").read_text())
    old_rows = [
        {
            "Percentiles": row["Percentiles"],
            "Latency (s)": row["Latency (s)"],
            "TTFT (s)": row["TTFT (ms)"] / 1000,
            "TPOT (s)": row["TPOT (ms)"] / 1000,
        }
        for row in rows
        if row["Percentiles"].endswith("%")
    ]
    files = [
        (json.dumps(old_summary).encode(), "benchmark_summary.json"),
        (json.dumps(old_rows).encode(), "benchmark_percentile.json"),
    ]
    (old,) = runs_in(files)
    (new,) = runs_in(folder_files(TOO_LONG))
    for name in ("request_count", "concurrency", "qps", "output_tps", "e2e_p99_ms"):
        assert old.fields[name] == pytest.approx(new.fields[name]), name
    assert old.fields["ttft_p99_ms"] == pytest.approx(new.fields["ttft_p99_ms"])
    assert old.errors == new.errors == 11


def test_a_bad_percentile_cell_is_named():
    rows = json.loads((TOO_LONG / "benchmark_percentile.json").read_text())
    rows[6]["Latency (s)"] = "slow"
    files = [
        ((TOO_LONG / "benchmark_summary.json").read_bytes(), "benchmark_summary.json"),
        (json.dumps(rows).encode(), "benchmark_percentile.json"),
    ]
    with pytest.raises(LoadTestImportError) as caught:
        runs_in(files)
    assert str(caught.value).startswith(
        "evalscope: benchmark_percentile.json: [6].Latency (s): expected a number"
    )


def test_the_arguments_alone_are_refused_naming_the_files_to_import():
    ((content, name),) = prepare_files(folder_files(TOO_LONG, ("benchmark_args.json",)))
    with pytest.raises(LoadTestImportError, match=r"this is benchmark_args\.json"):
        parse_file(content, filename=name)


def test_a_folders_side_files_are_skipped_in_its_archive():
    with tarfile.open(CLOSED) as archive:
        inside = [m.name for m in archive if m.isfile()]
    assert "closed-sweep/benchmark.log" in inside
    assert "closed-sweep/parallel_1_number_10/workload_timeline.json" in inside
    assert names_of(prepare_files([(CLOSED.read_bytes(), "s.tgz")])) == [
        "s.tgz/closed-sweep/parallel_1_number_10",
        "s.tgz/closed-sweep/parallel_4_number_40",
        "s.tgz/closed-sweep/parallel_8_number_80",
    ]


def test_detection_reads_a_joined_folder_as_evalscope():
    ((content, _),) = prepare_files(folder_files(NO_STREAM))
    assert parse_loadtest(content)[0].format == "evalscope"


# -- stored ----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_imported_sweep_archive_makes_a_sweep(service):
    runs = import_loadtest_files(service=service, files=[(CLOSED.read_bytes(), CLOSED.name)])
    assert len(runs) == 3
    (sweep,) = sweeps_for_service(service)
    assert (sweep.format, sweep.axis) == ("evalscope", "concurrency")
    assert [run.concurrency for run in sweep.runs] == [1, 4, 8]


@pytest.mark.django_db
def test_importing_the_folder_again_from_another_archive_stores_nothing(service):
    import_loadtest_files(service=service, files=[(CLOSED.read_bytes(), CLOSED.name)])
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive, tarfile.open(CLOSED) as original:
        for member in original:
            data = original.extractfile(member) if member.isfile() else None
            member.name = f"renamed/{member.name}"
            archive.addfile(member, data)
    again = import_loadtest_files(service=service, files=[(buf.getvalue(), "copy.tar")])
    assert [run.just_created for run in again] == [False, False, False]
    assert LoadTest.objects.count() == 3


@pytest.mark.django_db
def test_an_owner_uploads_a_runs_two_files_on_the_page(owner_client, service):
    uploads = [SimpleUploadedFile(name, data) for data, name in folder_files(TOO_LONG)]
    response = owner_client.post(reverse("loadtests:upload", args=["chat-7b"]), {"file": uploads})
    assert response.status_code == 302
    run = LoadTest.objects.get()
    assert (run.format, run.concurrency, run.errors) == ("evalscope", 4, 11)


@pytest.fixture
def api(owner):
    client = APIClient()
    client.force_login(owner)
    return client


@pytest.mark.django_db
def test_the_api_imports_a_zipped_folder(api, service):
    upload = SimpleUploadedFile(OPEN.name, OPEN.read_bytes())
    response = api.post("/api/v1/services/chat-7b/loadtests/", {"file": upload}, format="multipart")
    assert (response.status_code, response.json()["created"]) == (201, 2)


@pytest.mark.django_db
def test_the_command_imports_a_results_folder(service, tmp_path, capsys):
    with tarfile.open(CLOSED) as archive:
        archive.extractall(tmp_path, filter="data")
    call_command("import_loadtest", str(tmp_path / "closed-sweep"), "--service", "chat-7b")
    assert sorted(LoadTest.objects.values_list("concurrency", flat=True)) == [1, 4, 8]


@pytest.mark.django_db
def test_the_command_refuses_a_lone_summary_with_exit_2(service):
    with pytest.raises(CommandError, match=r"benchmark_percentile\.json") as caught:
        call_command(
            "import_loadtest", str(TOO_LONG / "benchmark_summary.json"), "--service", "chat-7b"
        )
    assert caught.value.returncode == 2


# -- bad input -------------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)


def joined(folder: Path) -> dict:
    ((content, _),) = prepare_files(folder_files(folder))
    return json.loads(content)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_value_of_a_real_run_replaced_is_read_or_refused_saying_why(data):
    document = joined(data.draw(st.sampled_from([TOO_LONG, NO_STREAM])))
    run = document["evalscope_perf_run"]
    part = data.draw(st.sampled_from(["summary", "percentiles", "args"]))
    if part == "percentiles":
        row = data.draw(st.sampled_from(run["percentiles"]))
        row[data.draw(st.sampled_from(sorted(row)))] = data.draw(json_values)
    else:
        run[part][data.draw(st.sampled_from(sorted(run[part])))] = data.draw(json_values)
    try:
        (parsed,) = parse_loadtest(json.dumps(document))
    except LoadTestFormatError as exc:
        assert str(exc).startswith("evalscope: ")
        return
    json.dumps(parsed.extra, allow_nan=False)  # storable as jsonb
    assert all(v is None or math.isfinite(v) for v in parsed.fields.values())


@pytest.mark.django_db
def test_a_run_where_most_requests_failed_is_not_made_a_baseline(service):
    with pytest.raises(PromotionError, match="failed_share"):
        import_loadtest_files(service=service, files=folder_files(TOO_LONG), baseline=True)
    assert not LoadTest.objects.exists()


def test_a_deeply_nested_file_of_a_pair_is_refused_before_it_is_parsed():
    files = [(b"[" * 100_000, "benchmark_summary.json"), (b"[]", "benchmark_percentile.json")]
    with pytest.raises(LoadTestImportError, match=r"nested more than 64 levels"):
        prepare_files(files)


@pytest.mark.django_db
def test_the_api_imports_a_folder_sent_as_the_raw_body(api, service):
    response = api.post(
        "/api/v1/services/chat-7b/loadtests/?measured_at=2026-12-06T01:48:00Z",
        data=CLOSED.read_bytes(),
        content_type="application/gzip",
    )
    assert (response.status_code, response.json()["created"]) == (201, 3)
    assert all(run["measured_at"].startswith("2026-12-06T01:48") for run in response.json()["runs"])


def test_a_runs_time_is_its_output_folders_name():
    """evalscope names its output folder for the command's start (local time, no zone)."""
    runs = runs_in([(OPEN.read_bytes(), OPEN.name)])
    assert {run.measured_at for run in runs} == {datetime(2026, 12, 6, 1, 48, 18, tzinfo=UTC)}
    assert "20261206_014818" in runs[0].sources["measured_at"]


def test_a_folder_without_its_timestamped_parent_has_no_time():
    assert {run.measured_at for run in runs_in([(CLOSED.read_bytes(), CLOSED.name)])} == {None}


@pytest.mark.django_db
def test_the_folders_time_is_re_read_in_the_zone_the_importer_names(service):
    runs = import_loadtest_files(
        service=service,
        files=[(OPEN.read_bytes(), OPEN.name)],
        file_timezone=ZoneInfo("Asia/Shanghai"),
    )
    assert {run.measured_at for run in runs} == {datetime(2026, 12, 5, 17, 48, 18, tzinfo=UTC)}


@pytest.mark.django_db
def test_the_api_names_the_files_it_left_out(api, service):
    upload = SimpleUploadedFile(OPEN.name, OPEN.read_bytes())
    response = api.post("/api/v1/services/chat-7b/loadtests/", {"file": upload}, format="multipart")
    skipped = response.json()["skipped"]
    assert f"{OPEN.name}/20261206_014818/open-loop/benchmark.log" in skipped
    assert len(skipped) == 6  # the log, the console table, two timelines a run


@pytest.mark.django_db
def test_the_command_says_what_it_left_out_of_a_folder(service, tmp_path):
    with tarfile.open(CLOSED) as archive:
        archive.extractall(tmp_path, filter="data")
    out = io.StringIO()
    call_command(
        "import_loadtest", str(tmp_path / "closed-sweep"), "--service", "chat-7b", stdout=out
    )
    assert "Skipped 8 files that are not runs: " in out.getvalue()


# -- the folder's per-request database ----------------------------------------------------------

WITH_DB = FOLDER / "e2e-evalscope-1.14.1-db-sweep.tar.gz"
DB_RUN = "20261206_042845/db-sweep/parallel_2_number_40/"


def members(archive: Path) -> dict[str, bytes]:
    with tarfile.open(archive) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def with_database(change) -> list[tuple[bytes, str]]:
    """The c=2 run's files as a browser uploads them, its database changed by `change(db)`."""
    import sqlite3
    import tempfile

    files = members(WITH_DB)
    with tempfile.NamedTemporaryFile(suffix=".db") as handle:
        handle.write(files[DB_RUN + "benchmark_data.db"])
        handle.flush()
        db = sqlite3.connect(handle.name)
        change(db)
        db.commit()
        db.close()
        changed = Path(handle.name).read_bytes()
    names = [*RUN_FILES, "benchmark_data.db"]
    return [(changed if n.endswith(".db") else files[DB_RUN + n], n) for n in names]


def test_a_folders_database_gives_each_requests_latencies():
    runs = by_concurrency(runs_in([(WITH_DB.read_bytes(), WITH_DB.name)]))
    assert {family: len(v) for family, v in runs[2].samples.items()} == {
        "e2e": 40,
        "ttft": 38,  # two requests evalscope timed no chunk of
        "tpot": 38,
        "itl": 38 * 31,  # 32 tokens a request, one chunk each
    }
    assert len(runs[8].samples["e2e"]) == 80


def test_requests_with_no_chunk_timed_are_left_out_of_ttft_and_said():
    run = by_concurrency(runs_in([(WITH_DB.read_bytes(), WITH_DB.name)]))[8]
    assert min(run.samples["ttft"]) > 0
    assert any("7 of 80 streamed requests have no chunk timed" in n for n in run.extra["notes"])


def test_the_stored_figures_stay_the_percentile_files_with_or_without_the_database():
    with_db = runs_in(with_database(lambda db: None))
    without = runs_in(with_database(lambda db: None)[:3])
    assert with_db[0].fields == without[0].fields
    assert without[0].samples == {}


def test_a_database_of_another_run_is_refused():
    files = with_database(lambda db: db.execute("DELETE FROM result WHERE rowid > 30"))
    with pytest.raises(LoadTestImportError, match=r"holds 30 successful requests.*counts 40"):
        runs_in(files)


def test_a_database_without_the_result_table_is_refused_naming_the_file():
    files = with_database(lambda db: db.execute("ALTER TABLE result RENAME TO other"))
    with pytest.raises(LoadTestImportError, match=r"benchmark_data\.db: no table named 'result'"):
        prepare_files(files)


def test_a_view_named_result_is_not_read():
    def swap(db):
        db.execute("ALTER TABLE result RENAME TO real_rows")
        db.execute("CREATE VIEW result AS SELECT * FROM real_rows")

    with pytest.raises(LoadTestImportError, match="no table named 'result'"):
        prepare_files(with_database(swap))


def test_a_damaged_database_is_refused_saying_so():
    files = with_database(lambda db: None)
    content = files[3][0]
    damaged = content[:4096] + bytes(len(content) - 4096)
    with pytest.raises(LoadTestImportError, match=r"benchmark_data\.db: not a readable database"):
        prepare_files([*files[:3], (damaged, "benchmark_data.db")])


def test_a_database_without_its_run_files_is_refused_naming_them():
    files = with_database(lambda db: None)
    with pytest.raises(LoadTestImportError, match=r"benchmark_summary\.json and benchmark_perc"):
        prepare_files([files[3]])


@pytest.mark.django_db
def test_a_run_imported_with_its_database_is_stored_with_its_distributions(service):
    runs = import_loadtest_files(service=service, files=[(WITH_DB.read_bytes(), WITH_DB.name)])
    run = next(run for run in runs if run.concurrency == 2)
    assert {(s.family, s.count) for s in run.sketches.all()} == {
        ("e2e", 40),
        ("ttft", 38),
        ("tpot", 38),
        ("itl", 38 * 31),
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# Offsets in the first page (the header and the schema) half the time, anywhere the rest.
@given(
    flips=st.lists(
        st.tuples(st.integers(0, 4095) | st.integers(0, 10**6), st.integers(0, 255)),
        max_size=12,
    )
)
def test_a_database_with_bytes_changed_is_read_or_refused_never_crashes(flips):
    files = members(WITH_DB)
    content = bytearray(files[DB_RUN + "benchmark_data.db"])
    for offset, value in flips:
        content[offset % len(content)] = value
    upload = [(files[DB_RUN + name], name) for name in RUN_FILES]
    upload.append((bytes(content), "benchmark_data.db"))
    try:
        runs = runs_in(upload)
    except LoadTestImportError as exc:
        assert "benchmark_data.db" in str(exc)
    else:
        assert len(runs) == 1
