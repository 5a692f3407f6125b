"""Where lint findings show: stored with the run, the CLI (and --strict), the API, the run page,
promotion (refused without an override; the override on the timeline) and the gate."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from rest_framework.test import APIClient

from dashboards.timeline import timeline
from dossiers.models import Baseline
from loadtests.gate import run_gate
from loadtests.importing import PromotionError, import_loadtest_file, promote_load_test
from loadtests.models import GateRun, LoadTest

pytestmark = pytest.mark.django_db


@pytest.fixture
def c16(fixtures_dir):
    return fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json"


def tiny_outputs(c16) -> bytes:
    """The 400-request file with one output token per request: a refusing finding."""
    data = json.loads(c16.read_text())
    data["output_lens"] = [1] * len(data["output_lens"])
    data["total_output_tokens"] = data["completed"]
    return json.dumps(data).encode()


@pytest.fixture
def broken(tmp_path, c16):
    path = tmp_path / "tiny.json"
    path.write_bytes(tiny_outputs(c16))
    return path


def cli(*args) -> str:
    out = StringIO()
    call_command("import_loadtest", *map(str, args), stdout=out)
    return out.getvalue()


def test_the_run_keeps_its_findings_and_fingerprint(service, broken):
    cli(broken, "--service", service.slug)
    run = LoadTest.objects.get(service=service)
    assert [f["check"] for f in run.refusing_findings] == ["tiny_outputs"]
    assert run.fingerprint["output"]["quantiles"]["p50"] == 1


def test_the_command_prints_each_finding_with_its_fix(service, broken):
    out = cli(broken, "--service", service.slug)
    assert "[refuse] tiny_outputs: output tokens per request" in out and "Fix: set the" in out


def test_strict_exits_2_on_a_refusing_finding_and_stores_nothing(service, broken):
    with pytest.raises(CommandError) as caught:
        cli(broken, "--service", service.slug, "--strict")
    assert caught.value.returncode == 2 and "refusing lint finding" in str(caught.value)
    assert not LoadTest.objects.filter(service=service).exists()


def test_strict_passes_a_file_with_warnings_only(service, c16):
    out = cli(c16, "--service", service.slug, "--strict")  # too_short on P99.9: a warning
    assert "[warn] too_short" in out and LoadTest.objects.filter(service=service).count() == 1


def test_baseline_refuses_a_run_with_a_refusing_finding(service, broken):
    with pytest.raises(CommandError, match="tiny_outputs") as caught:
        cli(broken, "--service", service.slug, "--baseline")
    assert caught.value.returncode == 2 and not Baseline.objects.exists()


def test_an_override_promotes_and_the_timeline_says_why(service, broken):
    cli(broken, "--service", service.slug, "--baseline", "--override-lint", "max_tokens=1 probe")
    marker = next(m for m in timeline(service=service) if m.kind == "baseline")
    assert "despite lint findings (tiny_outputs): max_tokens=1 probe" in marker.detail


def test_the_page_promotion_needs_a_reason_with_refusing_findings(owner_client, service, c16):
    (run,) = import_loadtest_file(service=service, content=tiny_outputs(c16), filename="t.json")
    owner_client.post(reverse("loadtests:promote", args=[service.slug, run.pk]))
    run.refresh_from_db()
    assert run.promoted_to is None


def test_the_run_page_lists_findings_before_the_workload(owner_client, service, c16):
    (run,) = import_loadtest_file(service=service, content=tiny_outputs(c16), filename="t.json")
    html = owner_client.get(run.get_absolute_url()).content.decode()
    assert html.index("tiny_outputs") < html.index("<h2>Workload</h2>")


def test_the_api_returns_the_findings(owner, service, c16):
    api = APIClient()
    api.force_login(owner)
    url = f"/api/v1/services/{service.slug}/loadtests/"
    body = api.post(url, tiny_outputs(c16), content_type="application/json").json()
    assert body["runs"][0]["refusing"] is True
    assert "tiny_outputs" in [finding["check"] for finding in body["runs"][0]["lint"]]


def test_the_api_refuses_to_promote_a_refusing_run_with_400(owner, service, c16):
    api = APIClient()
    api.force_login(owner)
    url = f"/api/v1/services/{service.slug}/loadtests/?baseline=1"
    response = api.post(url, tiny_outputs(c16), content_type="application/json")
    assert response.status_code == 400 and "tiny_outputs" in response.json()["detail"]


def test_promotion_records_the_override(service, c16, owner):
    (run,) = import_loadtest_file(service=service, content=tiny_outputs(c16), filename="t.json")
    with pytest.raises(PromotionError):
        promote_load_test(load_test=run, user=owner)
    promote_load_test(load_test=run, user=owner, override_lint="known probe")
    assert run.lint_override["by"] == owner.get_username()
    assert run.lint_override["checks"] == ["tiny_outputs"]


def test_the_gate_says_the_candidate_has_findings(service, c16):
    import_loadtest_file(service=service, content=c16.read_bytes(), filename="c16.json",
                         baseline=True)  # fmt: skip
    data = json.loads(c16.read_text())
    data["ttfts"][:4] = [t * 60 for t in data["ttfts"][:4]]  # a cold start
    data["p99.9_ttft_ms"] = max(data["ttfts"]) * 1000  # which the tool's summary shows too
    gate_run = run_gate(
        service=service, source=GateRun.Source.CLI, candidate_content=json.dumps(data).encode()
    )
    note = next(n for n in gate_run.result["lint"] if n["side"] == "candidate")
    assert note["refusing"] == ["cold_start"]
    assert (
        "candidate “vllm bench c=16”" in gate_run.table and "refusing: cold_start" in gate_run.table
    )


def test_the_runs_list_marks_a_run_with_refusing_findings(owner_client, service, c16):
    import_loadtest_file(service=service, content=tiny_outputs(c16), filename="t.json")
    html = owner_client.get(reverse("loadtests:list", args=[service.slug])).content.decode()
    assert "lint: 1 refusing" in html
