"""A run stored "date unknown", imported again with a file of the same measurement that dates it
(an inference-perf stage alone, then its folder with the stage's stub; GenAI-Perf's summary, then
its per-request export), is not stored again: the stored run takes the file's start, and its
duration where it had none (`loadtests.importing.fill_in_time`). A run already dated keeps its
time, and the file is refused as before."""

import gzip
from io import StringIO

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from loadtests.models import LoadTest
from tests.loadtests.test_inference_perf_stage_times import FOLDER, STAGE_0_START, members
from tests.loadtests.test_twin_files import GENAI_PERF

pytestmark = pytest.mark.django_db

STAGE_0 = "stage_0_lifecycle_metrics.json"
GP_C1 = "e2e-genai-perf-0.0.8-c1-profile_export"
SUMMARY = f"{GP_C1}_genai_perf.json"


def write(tmp_path, name: str, content: bytes):
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return path


def command(*args) -> str:
    out = StringIO()
    call_command("import_loadtest", *map(str, args), stdout=out)
    return out.getvalue()


def per_request() -> bytes:
    return gzip.decompress((GENAI_PERF / f"{GP_C1}.json.gz").read_bytes())


def api(owner):
    client = APIClient()
    client.force_login(owner)
    return client


def upload(client, service, *files):
    return client.post(
        f"/api/v1/services/{service.slug}/loadtests/",
        {"file": [_named(content, name) for content, name in files]},
        format="multipart",
    )


def _named(content: bytes, name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content)


# -- inference-perf: a stage alone, then its folder ---------------------------------------------


def test_the_command_dates_a_stage_stored_alone_from_its_folder(service, tmp_path):
    files = members()
    command(write(tmp_path, f"alone/{STAGE_0}", files[STAGE_0]), "--service", service.slug)
    for name, content in files.items():
        write(tmp_path, f"folder/{name}", content)
    out = command(tmp_path / "folder", "--service", service.slug)
    assert "was stored with its date unknown" in out
    dated = LoadTest.objects.get(request_rate=3.0)
    assert (dated.measured_at, dated.date_known) == (STAGE_0_START, True)
    assert LoadTest.objects.count() == 2  # stage 0 once, and stage 1


def test_the_api_dates_a_stage_stored_alone_from_its_folders_archive(owner, service):
    client = api(owner)
    files = members()
    assert upload(client, service, (files[STAGE_0], STAGE_0)).status_code == 201
    response = upload(client, service, (FOLDER.read_bytes(), FOLDER.name))
    assert response.status_code == 201  # stage 1 is new
    (note,) = response.json()["filled_in"]
    assert "start 2026-12-07 12:15:17 UTC" in note
    assert LoadTest.objects.get(request_rate=3.0).measured_at == STAGE_0_START


# -- GenAI-Perf: the summary, then its per-request export ------------------------------------------


def test_the_command_dates_a_genai_perf_summary_from_its_per_request_file(service, tmp_path):
    command(GENAI_PERF / SUMMARY, "--service", service.slug)
    out = command(write(tmp_path, "profile_export.json", per_request()), "--service", service.slug)
    (run,) = LoadTest.objects.all()
    assert run.date_known
    assert "gave the run its start 2026-12-04 18:52:13 UTC and duration 1.80098 s" in out


def test_the_api_dates_a_genai_perf_summary_from_its_per_request_file(owner, service):
    client = api(owner)
    upload(client, service, ((GENAI_PERF / SUMMARY).read_bytes(), SUMMARY))
    response = upload(client, service, (per_request(), "profile_export.json"))
    assert response.status_code == 200
    (run,) = LoadTest.objects.all()
    assert run.date_known


def test_the_command_keeps_the_time_of_a_dated_stage_imported_again_alone(service, tmp_path):
    # Under its own name at its position, the stage is the run already imported (as a file
    # the tool appended to): not stored again, and its time from the stub stays.
    files = members()
    for name, content in files.items():
        write(tmp_path, f"folder/{name}", content)
    command(tmp_path / "folder", "--service", service.slug)
    out = command(write(tmp_path, f"alone/{STAGE_0}", files[STAGE_0]), "--service", service.slug)
    assert "0 new, 1 already imported" in out
    assert LoadTest.objects.count() == 2
    assert LoadTest.objects.get(request_rate=3.0).measured_at == STAGE_0_START


def test_the_api_refuses_a_stage_alone_after_its_dated_folder_and_keeps_the_time(owner, service):
    client = api(owner)
    upload(client, service, (FOLDER.read_bytes(), FOLDER.name))
    response = upload(client, service, (members()[STAGE_0], STAGE_0))
    assert response.status_code == 400
    assert "already stored" in response.json()["detail"]
    assert LoadTest.objects.get(request_rate=3.0).measured_at == STAGE_0_START


def test_the_command_refuses_a_summary_after_its_per_request_file_and_keeps_the_time(
    service, tmp_path
):
    command(write(tmp_path, "profile_export.json", per_request()), "--service", service.slug)
    (before,) = LoadTest.objects.values_list("measured_at", flat=True)
    with pytest.raises(CommandError, match="already stored"):
        command(GENAI_PERF / SUMMARY, "--service", service.slug)
    assert list(LoadTest.objects.values_list("measured_at", flat=True)) == [before]


def test_the_api_refuses_a_summary_after_its_per_request_file(owner, service):
    client = api(owner)
    upload(client, service, (per_request(), "profile_export.json"))
    response = upload(client, service, ((GENAI_PERF / SUMMARY).read_bytes(), SUMMARY))
    assert response.status_code == 400
    assert "as GenAI-Perf computes its summary" in response.json()["detail"]


def test_a_time_the_importer_gave_is_not_replaced_and_the_file_is_refused(service, tmp_path):
    command(GENAI_PERF / SUMMARY, "--service", service.slug, "--measured-at", "2026-12-04T18:00Z")
    with pytest.raises(CommandError, match="already stored"):
        command(write(tmp_path, "profile_export.json", per_request()), "--service", service.slug)
    (run,) = LoadTest.objects.all()
    assert run.measured_at.isoformat() == "2026-12-04T18:00:00+00:00"


def test_a_dated_stage_keeps_its_own_duration(service, tmp_path):
    """Only a missing figure is filled in: the stage's own duration (benchmark_time_seconds)
    stays, though the stub beside it spans a longer window."""
    files = members()
    command(write(tmp_path, f"alone/{STAGE_0}", files[STAGE_0]), "--service", service.slug)
    for name, content in files.items():
        write(tmp_path, f"folder/{name}", content)
    out = command(tmp_path / "folder", "--service", service.slug)
    assert "gave the run its start 2026-12-07 12:15:17 UTC\n" in out  # and no duration
    assert LoadTest.objects.get(request_rate=3.0).duration_s == pytest.approx(5.699016594000113)


def test_the_upload_page_says_what_it_filled_in(owner_client, service):
    url = reverse("loadtests:upload", args=[service.slug])
    owner_client.post(url, {"file": _named((GENAI_PERF / SUMMARY).read_bytes(), SUMMARY)})
    response = owner_client.post(
        url, {"file": _named(per_request(), "profile_export.json")}, follow=True
    )
    page = response.content.decode()
    assert "gave the run its start 2026-12-04 18:52:13 UTC" in page
