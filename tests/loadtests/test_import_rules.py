"""What importing promises whatever the file: failed runs, unknown dates, bad input, new formats.

- A run with no successful request is stored as failed and is never a baseline or a gate
  reference (the gate answers exit 2 with the reason).
- A run without a time is dated by `--measured-at` / the form / the API, else "date unknown".
- import_loadtest and perf_gate exit 2 with one line on any bad file, never a traceback.
- A format registered at run time is read by the CLI and the API with no other edit.
"""

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from dossiers.models import Baseline
from loadtests.formats import (
    LoadTestFormat,
    ParsedRun,
    format_names,
    register,
    unregister,
)
from loadtests.formats.base import Ctx, empty_fields, single_object
from loadtests.importing import (
    PromotionError,
    import_loadtest_file,
    promote_load_test,
)
from loadtests.models import GateRun, LoadTest

pytestmark = pytest.mark.django_db

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
FAILED = REAL / "vllm-bench" / "er0080-bench_serve_all_requests_failed_v0.25.1.json"
GENAI_PERF = REAL / "genai-perf" / "wellflat-2025-09-16-profile_export_genai_perf.json"
OK_RUN = REAL / "vllm-bench" / "er0080-bench_serve_v0.25.1.json"


def cli(command: str, *args) -> str:
    out = StringIO()
    call_command(command, *map(str, args), stdout=out, stderr=StringIO())
    return out.getvalue()


@pytest.fixture
def api(owner):
    client = APIClient()
    client.force_login(owner)
    return client


# -- failed runs ----------------------------------------------------------------------------------


def test_a_failed_run_cannot_become_the_baseline_on_import(service):
    with pytest.raises(CommandError, match=r"failed .*cannot become a baseline") as caught:
        cli("import_loadtest", FAILED, "--service", service.slug, "--baseline")
    assert caught.value.returncode == 2
    assert not LoadTest.objects.exists() and not Baseline.objects.exists()


def test_a_stored_failed_run_cannot_be_promoted(service):
    (run,) = import_loadtest_file(service=service, content=FAILED.read_bytes())
    with pytest.raises(PromotionError, match="cannot become a baseline"):
        promote_load_test(load_test=run)


def test_the_cli_says_a_run_failed(service):
    out = cli("import_loadtest", FAILED, "--service", service.slug)
    assert "FAILED: no request succeeded (0 completed)" in out


def test_the_gate_refuses_a_failed_candidate_with_exit_2(service):
    cli("import_loadtest", OK_RUN, "--service", service.slug, "--baseline")
    with pytest.raises(CommandError, match="candidate run failed") as caught:
        cli("perf_gate", "--service", service.slug, FAILED)
    assert caught.value.returncode == 2
    assert GateRun.objects.get().verdict == GateRun.Verdict.REFUSED


def test_a_baseline_promoted_from_a_failed_run_earlier_is_no_gate_reference(service, tmp_path):
    (run,) = import_loadtest_file(service=service, content=OK_RUN.read_bytes(), baseline=True)
    LoadTest.objects.filter(pk=run.pk).update(failure="no request succeeded (0 completed)")
    candidate = json.loads(OK_RUN.read_text())
    candidate["label"] = "candidate"
    path = tmp_path / "candidate.json"
    path.write_text(json.dumps(candidate))
    with pytest.raises(CommandError, match="no baseline") as caught:
        cli("perf_gate", "--service", service.slug, path)
    assert caught.value.returncode == 2


def test_the_page_of_a_failed_run_says_so_and_offers_no_promotion(owner_client, service):
    (run,) = import_loadtest_file(service=service, content=FAILED.read_bytes())
    page = owner_client.get(run.get_absolute_url()).content.decode()
    assert "failed run" in page and "no request succeeded" in page
    assert "Make it the baseline" not in page


def test_the_promote_button_refuses_a_failed_run(owner_client, service):
    (run,) = import_loadtest_file(service=service, content=FAILED.read_bytes())
    url = reverse("loadtests:promote", args=[service.slug, run.pk])
    response = owner_client.post(url, follow=True)
    assert "cannot become a baseline" in response.content.decode()
    assert not Baseline.objects.exists()


# -- dates ----------------------------------------------------------------------------------------


def test_a_run_without_a_time_is_marked_date_unknown(service):
    cli("import_loadtest", GENAI_PERF, "--service", service.slug)
    assert LoadTest.objects.get().date_known is False


def test_the_cli_asks_for_measured_at_when_the_file_has_no_time(service):
    out = cli("import_loadtest", GENAI_PERF, "--service", service.slug)
    assert "date unknown: pass --measured-at" in out


def test_measured_at_dates_a_run_without_a_time(service):
    cli(
        "import_loadtest",
        GENAI_PERF,
        "--service",
        service.slug,
        "--measured-at",
        "2025-09-16T10:00Z",
    )
    run = LoadTest.objects.get()
    assert run.date_known is True
    assert run.measured_at.isoformat() == "2025-09-16T10:00:00+00:00"
    assert run.extra["sources"]["measured_at"].startswith("given by the importer")


def test_measured_at_does_not_override_the_files_own_time(service):
    cli("import_loadtest", OK_RUN, "--service", service.slug, "--measured-at", "2025-01-01")
    assert LoadTest.objects.get().measured_at.isoformat() == "2026-08-16T16:08:53+00:00"


def test_file_timezone_rereads_vllms_local_date_in_that_zone(service):
    """vLLM writes `date` in the client's local time, with no zone: 16:08:53 in Berlin (CEST,
    UTC+2 in August) is 14:08:53 UTC, and the run's window moves with it."""
    cli("import_loadtest", OK_RUN, "--service", service.slug, "--file-timezone", "Europe/Berlin")
    run = LoadTest.objects.get()
    assert run.measured_at.isoformat() == "2026-08-16T14:08:53+00:00"
    assert "in Europe/Berlin" in run.extra["sources"]["measured_at"]


def test_an_unknown_file_timezone_is_exit_2_naming_it(service):
    with pytest.raises(CommandError) as caught:
        cli("import_loadtest", OK_RUN, "--service", service.slug, "--file-timezone", "Mars/Base")
    assert (caught.value.returncode, "'Mars/Base'" in str(caught.value)) == (2, True)


@pytest.mark.parametrize("value", ["yesterday", "2031-01-01T00:00Z", "1970-01-01"])
def test_a_bad_measured_at_exits_2(service, value):
    with pytest.raises(CommandError, match="measured at") as caught:
        cli("import_loadtest", GENAI_PERF, "--service", service.slug, "--measured-at", value)
    assert caught.value.returncode == 2


def test_the_api_takes_measured_at(api, service):
    response = api.post(
        f"/api/v1/services/{service.slug}/loadtests/?measured_at=2025-09-16T10:00:00Z",
        GENAI_PERF.read_bytes(),
        content_type="application/json",
    )
    assert response.status_code == 201
    run = response.json()["runs"][0]
    assert (run["measured_at"], run["date_known"]) == ("2025-09-16T10:00:00Z", True)


def test_the_api_refuses_a_measured_at_in_the_future_naming_it(api, service):
    response = api.post(
        f"/api/v1/services/{service.slug}/loadtests/?measured_at=2099-01-01T00:00:00Z",
        GENAI_PERF.read_bytes(),
        content_type="application/json",
    )
    assert response.status_code == 400 and "measured_at" in response.json()


def test_the_upload_form_takes_measured_at(owner_client, service):
    url = reverse("loadtests:upload", args=[service.slug])
    with GENAI_PERF.open("rb") as fh:
        owner_client.post(url, {"file": fh, "measured_at": "2025-09-16 10:00"})
    assert LoadTest.objects.get().date_known is True


def test_the_page_shows_date_unknown(owner_client, service):
    (run,) = import_loadtest_file(service=service, content=GENAI_PERF.read_bytes())
    assert "date unknown" in owner_client.get(run.get_absolute_url()).content.decode()


# -- where each number came from --------------------------------------------------------------


def test_the_page_names_the_key_behind_each_number(owner_client, service):
    (run,) = import_loadtest_file(service=service, content=OK_RUN.read_bytes())
    page = owner_client.get(run.get_absolute_url()).content.decode()
    assert "Where each number came from" in page
    assert "<code>median_ttft_ms</code>" in page
    assert "<code>total_output_tokens / duration</code>" in page


def test_the_api_returns_the_sources(api, service):
    response = api.post(
        f"/api/v1/services/{service.slug}/loadtests/",
        OK_RUN.read_bytes(),
        content_type="application/json",
    )
    assert response.json()["runs"][0]["sources"]["ttft_p50_ms"] == "median_ttft_ms"


# -- bad input: exit 2, one line, never a traceback -------------------------------------------


BAD_FILES = {
    "deeply nested": "[" * 50_000 + "]" * 50_000,
    "nested in an object": '{"completed": ' + "[" * 5000 + "]" * 5000 + "}",
    "binary junk": bytes(range(256)) * 4,
    "empty": b"",
    "whitespace": b"  \n\t\n",
    "a JSON string": b'"hello"',
    "NUL inside": b'{"completed": 1, "duration": 1, "label": "a\\u0000b", "request_rate": "\x00"}',
    "a huge integer": b'{"completed": 1' + b"0" * 400 + b', "duration": 1}',
    "NaN everywhere": b'{"completed": NaN, "duration": NaN}',
    "YAML aliases": b"benchmarks: &a [*a]\nx: [&b [1], *b, *b]\n",
    "deep YAML": ("a:\n" + "".join("  " * i + "b:\n" for i in range(1, 400))).encode(),
}


@pytest.mark.parametrize("command", ["import_loadtest", "perf_gate"])
@pytest.mark.parametrize("name", BAD_FILES)
def test_bad_input_exits_2_with_one_line(service, tmp_path, command, name):
    content = BAD_FILES[name]
    path = tmp_path / "bad.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    args = (
        (path, "--service", service.slug)
        if command == "import_loadtest"
        else (
            "--service",
            service.slug,
            path,
        )
    )
    with pytest.raises(CommandError) as caught:
        cli(command, *args)
    assert caught.value.returncode == 2
    assert "\n" not in str(caught.value)
    assert not LoadTest.objects.exists()


def test_a_nul_in_a_label_is_stored_without_it(service):
    data = json.loads(OK_RUN.read_text())
    data["label"] = "nightly\u0000run"
    (run,) = import_loadtest_file(service=service, content=json.dumps(data).encode())
    run.refresh_from_db()
    assert "\x00" not in run.label and run.extra["label"] == "nightlyrun"


# -- a new format, registered at run time --------------------------------------------------------


def _parse_locust(documents):
    data = single_object("locust-x", documents)
    ctx = Ctx("locust-x")
    fields = empty_fields()
    fields["request_count"] = ctx.integer(data, "num_requests", required=True)
    fields["e2e_p99_ms"] = ctx.num(data, "p99_response_time_ms")
    return [
        ParsedRun(
            format="locust-x",
            tool_version=None,
            label="locust",
            measured_at=None,
            fields=fields,
            sources={"request_count": "num_requests", "e2e_p99_ms": "p99_response_time_ms"},
        )
    ]


@pytest.fixture
def locust_format():
    register(
        LoadTestFormat(
            name="locust-x",
            label="Locust (test)",
            parse=_parse_locust,
            required=("num_requests",),
            signature=("num_requests", "p99_response_time_ms"),
        )
    )
    yield
    unregister("locust-x")


LOCUST = b'{"num_requests": 120, "p99_response_time_ms": 812.5}'


def test_a_registered_format_is_detected_by_the_cli(service, tmp_path, locust_format):
    path = tmp_path / "locust_stats.json"
    path.write_bytes(LOCUST)
    out = cli("import_loadtest", path, "--service", service.slug)
    assert "(locust-x)" in out
    assert LoadTest.objects.get().e2e_p99_ms == 812.5


def test_a_registered_format_can_be_forced_in_the_cli(service, tmp_path, locust_format):
    path = tmp_path / "stats.json"
    path.write_bytes(LOCUST)
    cli("import_loadtest", path, "--service", service.slug, "--format", "locust-x")
    assert LoadTest.objects.get().format == "locust-x"


def test_a_registered_format_is_read_by_the_api(api, service, locust_format):
    response = api.post(
        f"/api/v1/services/{service.slug}/loadtests/?format=locust-x",
        LOCUST,
        content_type="application/json",
    )
    assert response.status_code == 201
    assert response.json()["runs"][0]["request_count"] == 120


def test_a_registered_format_is_offered_on_the_upload_form(owner_client, service, locust_format):
    page = owner_client.get(reverse("loadtests:upload", args=[service.slug])).content.decode()
    assert 'value="locust-x"' in page


def test_an_unregistered_format_is_gone_everywhere(service, tmp_path):
    assert "locust-x" not in format_names()
    path = tmp_path / "stats.json"
    path.write_bytes(LOCUST)
    with pytest.raises(CommandError, match="could not detect the format"):
        cli("import_loadtest", path, "--service", service.slug)


def test_every_registered_format_has_its_table_in_the_docs():
    docs = (Path(__file__).resolve().parents[2] / "docs" / "loadtest-formats.md").read_text()
    for name in format_names():
        assert f"## `{name}`" in docs, name


def test_the_upload_form_names_the_registered_tools(owner_client, service, locust_format):
    page = owner_client.get(reverse("loadtests:upload", args=[service.slug])).content.decode()
    assert "Locust (test)" in page and "GenAI-Perf / AIPerf" in page


def test_the_gate_api_refuses_a_failed_candidate_with_422(api, service):
    import_loadtest_file(service=service, content=OK_RUN.read_bytes(), baseline=True)
    response = api.post(
        f"/api/v1/services/{service.slug}/gate/",
        FAILED.read_bytes(),
        content_type="application/json",
    )
    assert response.status_code == 422
    assert "candidate run failed" in response.json()["detail"]
