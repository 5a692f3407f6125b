"""guidellm's CSV export (`benchmarks.csv`) uploaded on its own is the runs its JSON report
holds, and one of the two after the other is refused as the run already stored.

The files were made here by guidellm 0.8.1 against the CPU vLLM (tests/fixtures/real/SOURCES.md):
each CSV beside the JSON report guidellm wrote in the same run.
"""

import csv
import gzip
import io
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
import time_machine

from loadtests.formats import LoadTestFormatError, parse_loadtest
from loadtests.importing import LoadTestImportError, import_loadtest_file
from loadtests.models import LoadTest

pytestmark = pytest.mark.django_db

GUIDELLM = Path(__file__).resolve().parents[1] / "fixtures" / "real" / "guidellm"
CONCURRENT = "e2e-guidellm-0.8.1-csv-concurrent-2-4-benchmarks"
CONSTANT = "e2e-guidellm-0.8.1-csv-constant-4-benchmarks"
SYNCHRONOUS = "e2e-guidellm-0.8.1-csv-synchronous-benchmarks"
BERLIN = "e2e-guidellm-0.8.1-csv-tz-berlin-concurrent-2-benchmarks"
ONLY_IN_JSON = ("e2e_p999_ms", "ttft_p999_ms", "tpot_p999_ms")


def csv_bytes(stem: str) -> bytes:
    return (GUIDELLM / f"{stem}.csv").read_bytes()


def json_bytes(stem: str) -> bytes:
    return gzip.decompress((GUIDELLM / f"{stem}.json.gz").read_bytes())


def csv_runs(stem: str):
    return parse_loadtest(csv_bytes(stem), filename="benchmarks.csv")


def json_runs(stem: str):
    return parse_loadtest(json_bytes(stem), filename="benchmarks.json")


@pytest.mark.parametrize("stem", [CONCURRENT, CONSTANT, SYNCHRONOUS])
def test_the_csv_alone_holds_its_json_reports_runs_figure_for_figure(stem):
    from_csv, from_json = csv_runs(stem), json_runs(stem)
    assert [run.format for run in from_csv] == ["guidellm"] * len(from_json)
    for csv_run, json_run in zip(from_csv, from_json, strict=True):
        wanted = {k: v for k, v in json_run.fields.items() if k not in ONLY_IN_JSON}
        assert {k: v for k, v in csv_run.fields.items() if k not in ONLY_IN_JSON} == wanted
        assert csv_run.request_rate_inf == json_run.request_rate_inf


def test_the_csvs_figures_are_its_cells():
    # Read by hand from the CSV's first row: "Timings | Duration | Sec" 1.753241777420044,
    # "Request Counts | Successful" 20, "Request Latency | Successful Sec | Median"
    # 0.07273077964782715, "Token Metrics | Successful Output Tokens | Mean" 32.0,
    # "Benchmark | Strategy" concurrent@2, "Timings | Measure Start Time" 2026-12-07 14:19:08.
    run = csv_runs(CONCURRENT)[0]
    assert run.fields["duration_s"] == 1.753241777420044
    assert run.fields["request_count"] == 20
    assert run.fields["e2e_p50_ms"] == pytest.approx(72.73077964782715)
    assert run.fields["output_tps"] == pytest.approx(32 * 20 / 1.753241777420044)
    assert run.fields["concurrency"] == 2
    assert run.measured_at == datetime(2026, 12, 7, 14, 19, 8, tzinfo=UTC)


def test_a_constant_rate_is_read_from_the_strategy_it_names():
    (run,) = csv_runs(CONSTANT)  # "constant@4.00"
    assert run.fields["request_rate"] == 4.0
    assert not run.request_rate_inf


def test_what_the_csv_lacks_is_absent_and_said():
    run = csv_runs(SYNCHRONOUS)[0]
    assert all(run.fields[name] is None for name in ONLY_IN_JSON)
    assert run.samples == {}
    assert any("no P99.9 and no per-request samples" in note for note in run.extra["notes"])


def test_the_csvs_sources_name_its_columns():
    run = csv_runs(CONCURRENT)[0]
    assert run.sources["e2e_p90_ms"].startswith(
        '"Request Latency | Successful Sec | Percentiles" (p90)'
    )
    assert "read as UTC" in run.sources["measured_at"]


def test_the_csv_is_imported_on_its_own(service):
    stored = import_loadtest_file(
        service=service, content=csv_bytes(CONCURRENT), filename="benchmarks.csv"
    )
    assert [run.concurrency for run in stored] == [2, 4]
    assert all(run.date_known for run in stored)


def test_the_csv_after_its_json_is_refused_naming_the_stored_run(service):
    first = import_loadtest_file(
        service=service, content=json_bytes(CONSTANT), filename="benchmarks.json"
    )
    with pytest.raises(LoadTestImportError, match=rf"already stored as run #{first[0].pk} "):
        import_loadtest_file(service=service, content=csv_bytes(CONSTANT), filename="b.csv")
    assert LoadTest.objects.count() == 1


def test_the_json_after_its_csv_is_refused_too(service):
    import_loadtest_file(service=service, content=csv_bytes(CONCURRENT), filename="b.csv")
    with pytest.raises(LoadTestImportError, match="import one of them"):
        import_loadtest_file(service=service, content=json_bytes(CONCURRENT), filename="b.json")
    assert LoadTest.objects.count() == 2


def test_a_csv_written_in_another_time_zone_is_still_its_jsons_twin(service):
    # guidellm run with TZ=Europe/Berlin: the CSV says 15:22:34 for the JSON's 14:22:34.37 UTC.
    (csv_run,) = csv_runs(BERLIN)
    (json_run,) = json_runs(BERLIN)
    assert csv_run.measured_at - json_run.measured_at.replace(microsecond=0) == (
        datetime(2026, 12, 7, 15, 22, 34) - datetime(2026, 12, 7, 14, 22, 34)
    )
    import_loadtest_file(service=service, content=json_bytes(BERLIN), filename="b.json")
    with pytest.raises(LoadTestImportError, match="already stored"):
        import_loadtest_file(service=service, content=csv_bytes(BERLIN), filename="b.csv")


def test_the_file_timezone_rereads_the_csvs_local_time(service):
    (run,) = import_loadtest_file(
        service=service,
        content=csv_bytes(BERLIN),
        filename="b.csv",
        file_timezone=ZoneInfo("Europe/Berlin"),
    )
    assert run.measured_at == datetime(2026, 12, 7, 14, 22, 34, tzinfo=UTC)


def edited(change) -> bytes:
    """The constant-rate CSV with its rows changed by `change(rows)`, written back as CSV."""
    rows = list(csv.reader(csv_bytes(CONSTANT).decode().splitlines()))
    change(rows)
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    return out.getvalue().encode()


def test_a_cell_that_is_not_a_number_is_refused_naming_its_line_and_column():
    def slow(rows):
        rows[3][rows[1].index("Duration")] = "fast"

    with pytest.raises(LoadTestFormatError) as refused:
        parse_loadtest(edited(slow), filename="benchmarks.csv")
    assert str(refused.value) == (
        "guidellm: line 4: column 17 (\"Timings | Duration | Sec\"): expected a number, got 'fast'"
    )


def test_a_row_shorter_than_the_header_is_refused_naming_its_line():
    def cut(rows):
        rows[3] = rows[3][:-1]

    with pytest.raises(LoadTestFormatError, match="guidellm: line 4: expected 185 cells"):
        parse_loadtest(edited(cut), filename="benchmarks.csv")


def test_a_time_that_is_not_guidellms_is_refused_naming_its_column():
    text = csv_bytes(CONSTANT).decode()
    content = text.replace("2026-12-07 14:18:27", "yesterday").encode()
    with pytest.raises(
        LoadTestFormatError, match=r'\("Timings \| Measure Start Time"\): expected a time'
    ):
        parse_loadtest(content, filename="benchmarks.csv")


def test_a_csv_written_east_of_utc_is_stored_right_after_its_run(service):
    # Read as UTC, Berlin's 15:22:34 is an hour ahead of the import a minute after the run.
    with time_machine.travel(datetime(2026, 12, 7, 14, 24, tzinfo=UTC), tick=False):
        (run,) = import_loadtest_file(service=service, content=csv_bytes(BERLIN), filename="b.csv")
    assert run.measured_at == datetime(2026, 12, 7, 15, 22, 34, tzinfo=UTC)
