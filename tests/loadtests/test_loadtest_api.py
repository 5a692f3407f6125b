"""POST /api/v1/services/<slug>/loadtests/ and /gate/ with a team member's session (CI tokens
and agent tokens: test_ci_tokens.py)."""

import gzip
import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from dossiers.models import Baseline
from loadtests.models import GateRun, LoadTest

pytestmark = pytest.mark.django_db

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"
URL = "/api/v1/services/chat-7b/loadtests/"
GATE = "/api/v1/services/chat-7b/gate/"


@pytest.fixture
def api(owner):
    client = APIClient()
    client.force_login(owner)
    return client


@pytest.fixture
def c16(fixtures_dir):
    return fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json"


def test_it_imports_a_multipart_file_with_201(api, service, c16):
    with c16.open("rb") as fh:
        response = api.post(URL, {"file": fh}, format="multipart")
    assert response.status_code == 201
    assert response.json()["created"] == 1
    run = response.json()["runs"][0]
    assert (run["format"], run["concurrency"], run["source_name"]) == (
        "vllm-bench",
        16,
        "vllm-bench-serve-c16.json",
    )


def stage_files(*names: str) -> list[SimpleUploadedFile]:
    folder = REAL / "inference-perf"
    return [
        SimpleUploadedFile(name, (folder / f"e2e-inference-perf-0.7.0-{name}").read_bytes())
        for name in names
    ]


def test_several_file_parts_are_one_import_of_every_run(api, service):
    stages = stage_files(
        "rate-stage_0_lifecycle_metrics.json", "rate-stage_2_lifecycle_metrics.json"
    )
    response = api.post(URL, {"file": stages}, format="multipart")
    assert (response.status_code, response.json()["created"]) == (201, 2)
    assert [run["request_rate"] for run in response.json()["runs"]] == [1.0, 6.0]


def test_a_bad_part_among_several_answers_400_naming_it_and_stores_none(api, service):
    parts = [
        *stage_files("rate-stage_0_lifecycle_metrics.json"),
        SimpleUploadedFile("stage_7.json", b'{"load_summary": {}, "successes": {}}'),
    ]
    response = api.post(URL, {"file": parts}, format="multipart")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("stage_7.json: inference-perf: ")
    assert not LoadTest.objects.exists()


def test_it_imports_a_raw_json_body(api, service, fixtures_dir):
    body = (fixtures_dir / "loadtests" / "guidellm-sweep-benchmarks.json").read_bytes()
    response = api.post(URL, body, content_type="application/json")
    assert response.status_code == 201
    assert response.json()["created"] == 7


def test_it_imports_a_raw_csv_export(api, service):
    body = (REAL / "genai-perf" / "cloudai-ai-dynamo-profile_genai_perf.csv").read_bytes()
    response = api.post(URL, body, content_type="text/csv")
    assert response.status_code == 201
    assert LoadTest.objects.get().e2e_p99_ms == 9436.13


def test_a_bad_csv_row_answers_400_naming_its_line(api, service):
    body = (
        b"Metric,avg,p99\nRequest Latency (ms),3.0,slow\n"
        b"\nMetric,Value\nRequest Throughput (per sec),1.5\n"
    )
    response = api.post(URL, body, content_type="text/csv")
    assert response.status_code == 400
    assert response.json()["detail"].startswith("genai-perf: line 2: p99: expected a number")
    assert not LoadTest.objects.exists()


def test_the_same_file_again_answers_200_and_stores_nothing(api, service, c16):
    api.post(URL, c16.read_bytes(), content_type="application/json")
    response = api.post(URL, c16.read_bytes(), content_type="application/json")
    assert response.status_code == 200
    assert response.json()["created"] == 0
    assert LoadTest.objects.count() == 1


def test_baseline_in_the_query_promotes_the_run(api, service, c16):
    response = api.post(URL + "?baseline=true", c16.read_bytes(), content_type="application/json")
    assert response.json()["runs"][0]["baseline"] == Baseline.objects.get(is_current=True).pk


def test_a_bad_file_answers_400_naming_the_key(api, service, c16):
    data = json.loads(c16.read_text())
    data["output_throughput"] = "fast"
    response = api.post(URL, json.dumps(data), content_type="application/json")
    assert response.status_code == 400
    assert "output_throughput" in response.json()["detail"]
    assert not LoadTest.objects.exists()


def test_an_unknown_service_answers_404(api, c16):
    response = api.post(
        "/api/v1/services/nope/loadtests/", c16.read_bytes(), content_type="application/json"
    )
    assert response.status_code == 404


def test_an_outsider_gets_403(outsider, service, c16):
    client = APIClient()
    client.force_login(outsider)
    response = client.post(URL, c16.read_bytes(), content_type="application/json")
    assert response.status_code == 403


def test_anonymous_requests_are_refused(service, c16):
    response = APIClient().post(URL, c16.read_bytes(), content_type="application/json")
    assert response.status_code in (401, 403)


def test_the_gate_answers_200_with_the_verdict_and_table(api, service, c16):
    api.post(URL + "?baseline=1", c16.read_bytes(), content_type="application/json")
    response = api.post(GATE, c16.read_bytes(), content_type="application/json")
    assert response.status_code == 200
    body = response.json()
    assert body["verdict"] == "pass" and "PASS" in body["table"]
    assert body["result"]["passed"] is True
    assert GateRun.objects.get().source == "api"


def _slower_ttft(c16, factor=1.5) -> dict:
    data = json.loads(c16.read_text())
    for key in [k for k in data if k.endswith("_ttft_ms")]:
        data[key] *= factor
    data["ttfts"] = [t * factor for t in data["ttfts"]]
    return data


def test_the_gate_reports_a_regression_with_200(api, service, c16):
    api.post(URL + "?baseline=1", c16.read_bytes(), content_type="application/json")
    data = _slower_ttft(c16)
    response = api.post(GATE, json.dumps(data), content_type="application/json")
    assert (response.status_code, response.json()["verdict"]) == (200, "regression")


def test_the_gate_takes_several_files_as_the_repeats_of_one_build(api, service, c16):
    api.post(URL + "?baseline=1", c16.read_bytes(), content_type="application/json")
    repeats = []
    for number in range(3):
        data = _slower_ttft(c16, 1.3)
        data["date"] = f"20261113-10000{number}"  # another run, not the same file again
        repeats.append(SimpleUploadedFile(f"r{number}.json", json.dumps(data).encode()))
    response = api.post(GATE, {"file": repeats}, format="multipart")
    body = response.json()
    assert (response.status_code, body["verdict"]) == (200, "regression")
    assert len(body["candidates"]) == 3 and body["result"]["candidate_runs"] == 3
    assert len(body["baselines"]) == 1


def test_the_gate_refuses_another_shape_with_422(api, service, c16):
    api.post(URL + "?baseline=1", c16.read_bytes(), content_type="application/json")
    data = json.loads(c16.read_text())
    data["max_concurrency"] = 8
    response = api.post(GATE, json.dumps(data), content_type="application/json")
    assert response.status_code == 422
    assert "different concurrency: baseline 16, candidate 8" in response.json()["reasons"]


def test_the_gate_answers_400_for_a_bad_file(api, service):
    response = api.post(GATE, b"{nope", content_type="application/json")
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["detail"]


@pytest.mark.parametrize("path", [URL, "/api/v1/services/chat-7b/gate/"])
def test_deeply_nested_json_is_a_400_naming_the_limit(api, service, path):
    response = api.post(path, "[" * 50_000, content_type="application/json")
    assert response.status_code == 400
    assert "nested more than 64 levels" in response.json()["detail"]


def test_a_body_over_the_api_limit_is_a_json_413(api, service, settings):
    settings.PERFHUB_API_MAX_BYTES = 100
    response = api.post(URL, "{" + " " * 200 + "}", content_type="application/json")
    assert response.status_code == 413
    assert "100 bytes" in response.json()["detail"]


def test_it_imports_a_gzip_file_uploaded_as_is(api, service, c16):
    packed = SimpleUploadedFile(c16.name + ".gz", gzip.compress(c16.read_bytes()))
    response = api.post(URL, {"file": packed}, format="multipart")
    assert response.status_code == 201
    assert response.json()["runs"][0]["source_name"] == "vllm-bench-serve-c16.json.gz"


def test_a_damaged_gzip_body_answers_400_saying_so(api, service, c16):
    packed = gzip.compress(c16.read_bytes())
    response = api.post(URL, packed[:200], content_type="application/gzip")
    assert response.status_code == 400 and "gzip file is truncated" in response.json()["detail"]
