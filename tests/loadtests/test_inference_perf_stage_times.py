"""inference-perf 0.7's stages take their start from the stub it writes beside each stage
(`inference-perf.partial.stage_N.yaml`, `run.time`) when the folder, its archive, or the two
files together are imported; the stage reports themselves have no wall-clock time."""

import tarfile
from datetime import UTC, datetime
from io import StringIO

import pytest
from django.core.management import call_command

from loadtests.importing import LoadTestImportError, import_loadtest_files
from loadtests.models import LoadTest
from tests.loadtests.test_real_corpus import REAL

pytestmark = pytest.mark.django_db

FOLDER = REAL / "inference-perf" / "e2e-inference-perf-0.7.0-constant-folder.tar.gz"
# run.time.start of inference-perf.partial.stage_0.yaml and stage_1.yaml in that folder.
STAGE_0_START = datetime(2026, 12, 7, 12, 15, 17, 305949, tzinfo=UTC)
STAGE_1_START = datetime(2026, 12, 7, 12, 15, 26, 579700, tzinfo=UTC)


def members() -> dict[str, bytes]:
    with tarfile.open(FOLDER) as archive:
        return {
            info.name.split("/", 1)[1]: archive.extractfile(info).read()
            for info in archive
            if info.isfile()
        }


def by_rate(runs) -> dict[float, LoadTest]:
    return {run.request_rate: run for run in runs}


def test_each_stage_of_the_folders_archive_is_dated_by_its_stub(service):
    runs = by_rate(
        import_loadtest_files(service=service, files=[(FOLDER.read_bytes(), FOLDER.name)])
    )
    assert runs[3.0].measured_at == STAGE_0_START
    assert runs[6.0].measured_at == STAGE_1_START
    assert runs[3.0].date_known and runs[6.0].date_known


def test_the_stage_keeps_its_own_duration_and_the_stubs_window_is_kept_beside_it(service):
    runs = by_rate(
        import_loadtest_files(service=service, files=[(FOLDER.read_bytes(), FOLDER.name)])
    )
    # benchmark_time_seconds of stage_0_lifecycle_metrics.json; the stub's window
    # 12:15:17.305949 to 12:15:25.325004 also holds the second the queue fills.
    assert runs[3.0].duration_s == pytest.approx(5.699016594000113)
    assert runs[3.0].extra["stage_window_s"] == pytest.approx(8.019055)
    source = runs[3.0].extra["sources"]["measured_at"]
    assert source.startswith("inference-perf.partial.stage_0.yaml: run.time.start")


def test_the_command_dates_the_stages_of_a_folder(service, tmp_path):
    for name, content in members().items():
        (tmp_path / name).write_bytes(content)
    call_command("import_loadtest", str(tmp_path), "--service", service.slug, stdout=StringIO())
    dated = sorted(LoadTest.objects.values_list("measured_at", flat=True))
    assert dated == [STAGE_0_START, STAGE_1_START]


def test_a_stage_and_its_stub_uploaded_together_are_dated(service):
    files = members()
    (run,) = import_loadtest_files(
        service=service,
        files=[
            (files["stage_1_lifecycle_metrics.json"], "stage_1_lifecycle_metrics.json"),
            (files["inference-perf.partial.stage_1.yaml"], "inference-perf.partial.stage_1.yaml"),
        ],
    )
    assert run.measured_at == STAGE_1_START


def test_another_stages_stub_is_refused_naming_it(service):
    files = members()
    with pytest.raises(LoadTestImportError) as refused:
        import_loadtest_files(
            service=service,
            files=[
                (files["stage_0_lifecycle_metrics.json"], "stage_0_lifecycle_metrics.json"),
                (
                    files["inference-perf.partial.stage_1.yaml"],
                    "inference-perf.partial.stage_0.yaml",
                ),
            ],
        )
    assert "inference-perf.partial.stage_0.yaml: results.request_performance.aggregate" in str(
        refused.value
    )
    assert "24 requests, where this stage's report counts 18" in str(refused.value)
    assert not LoadTest.objects.exists()


def test_a_stub_whose_start_is_not_a_time_is_refused_naming_the_key(service):
    files = members()
    stub = files["inference-perf.partial.stage_0.yaml"].replace(
        b"start: '2026-12-07T12:15:17.305949Z'", b"start: 'soon'"
    )
    with pytest.raises(LoadTestImportError, match=r"stage_0\.yaml: run\.time\.start: expected"):
        import_loadtest_files(
            service=service,
            files=[
                (files["stage_0_lifecycle_metrics.json"], "out/stage_0_lifecycle_metrics.json"),
                (stub, "out/inference-perf.partial.stage_0.yaml"),
            ],
        )


def test_a_dated_stage_is_still_the_twin_of_its_llm_d_report(service):
    """llm-d stamps every stage's report with the harness's window (12:00:00 for all three stages
    of this run), which is not the stage's start: the report is still the stage already stored.
    The stub is written here from the 0.7 folder's, given this stage's request count and a start
    inside that window: no stub of the 2026-12-05 run was kept."""
    stub = (
        members()["inference-perf.partial.stage_1.yaml"]
        .replace(b"'2026-12-07T12:15:26.579700Z'", b"'2026-12-05T12:00:21.250000Z'")
        .replace(b"'2026-12-07T12:15:32.588566Z'", b"'2026-12-05T12:00:41.250000Z'")
        .replace(b"total: 24", b"total: 60")
    )
    stage = REAL / "inference-perf" / "e2e-inference-perf-0.7.0-rate-stage_1_lifecycle_metrics.json"
    (stored,) = import_loadtest_files(
        service=service,
        files=[
            (stage.read_bytes(), "out/stage_1_lifecycle_metrics.json"),
            (stub, "out/inference-perf.partial.stage_1.yaml"),
        ],
    )
    report = (
        REAL / "llm-d-report" / "e2e-inference-perf-0.7.0-rate"
        / "benchmark_report_v0.2,_stage_1_lifecycle_metrics.json.yaml"
    )  # fmt: skip
    with pytest.raises(LoadTestImportError, match=rf"already stored as run #{stored.pk} "):
        import_loadtest_files(service=service, files=[(report.read_bytes(), report.name)])
