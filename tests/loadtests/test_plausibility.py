"""Impossible numbers never enter as a load test: a higher percentile below a lower one, a
latency of a day or more, a non-finite value. Refused naming the field and the file key, on
every entry point (the command: exit 2, the API and the gate: 400), and nothing stored."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from dossiers.models import Baseline
from loadtests.models import GateRun, LoadTest

pytestmark = pytest.mark.django_db

URL = "/api/v1/services/chat-7b/loadtests/"
GATE = "/api/v1/services/chat-7b/gate/"


@pytest.fixture
def c16(fixtures_dir) -> dict:
    return json.loads((fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json").read_text())


def descending(data: dict) -> bytes:
    """The issue's probe: P50 9,000 > P90 5,000 > ... > P99.9 500 ms."""
    for label, value in (("p50", 9000), ("p90", 5000), ("p95", 2000), ("p99", 1000),
                         ("p99.9", 500)):  # fmt: skip
        data[f"{label}_e2el_ms"] = value
    data.pop("median_e2el_ms", None)
    return json.dumps(data).encode()


def too_long(data: dict) -> bytes:
    data["p99.9_ttft_ms"] = 1e308
    return json.dumps(data).encode()


@pytest.fixture
def api(owner):
    client = APIClient()
    client.force_login(owner)
    return client


def test_the_api_refuses_decreasing_percentiles_naming_the_field(api, service, c16):
    response = api.post(URL + "?baseline=true", descending(c16), content_type="application/json")
    assert response.status_code == 400
    assert "e2e_p90_ms" in json.dumps(response.json())
    assert "P90 (5000) is below P50 (9000)" in json.dumps(response.json())
    assert not LoadTest.objects.exists() and not Baseline.objects.exists()


def test_the_api_refuses_a_latency_over_a_day(api, service, c16):
    response = api.post(URL, too_long(c16), content_type="application/json")
    assert response.status_code == 400
    assert "p99.9_ttft_ms" in json.dumps(response.json())
    assert not LoadTest.objects.exists()


def test_the_gate_refuses_an_impossible_candidate(api, service, c16):
    response = api.post(GATE, descending(c16), content_type="application/json")
    assert response.status_code == 400
    assert "e2e_p90_ms" in json.dumps(response.json())
    assert not GateRun.objects.exists()


def test_the_command_exits_2_naming_the_field(service, c16, tmp_path):
    path = tmp_path / "probe.json"
    path.write_bytes(descending(c16))
    with pytest.raises(CommandError) as refused:
        call_command("import_loadtest", str(path), "--service", service.slug, "--baseline")
    assert refused.value.returncode == 2
    assert "p90_e2el_ms: e2e_p90_ms: P90 (5000) is below P50 (9000)" in str(refused.value)
    assert not LoadTest.objects.exists() and not Baseline.objects.exists()
