"""A Prometheus source cannot be pointed at an internal address, at save or at sync time, and
what a failing target answers is never stored: `last_error` is readable by every user."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler

import pytest
from django.core.exceptions import ValidationError

from collectors.models import PrometheusSource
from collectors.services.prometheus import source_create, source_sync
from tests.support import loopback_server

pytestmark = pytest.mark.django_db

SECRET = "s3cr3t-from-the-internal-service"

SPELLINGS = [
    "http://127.0.0.1:9090/",
    "http://localhost:9090/",
    "http://[::1]:9090/",
    "http://[::ffff:127.0.0.1]:9090/",
    "http://0:9090/",
    "http://2130706433:9090/",
    "http://0x7f000001:9090/",
    "http://017700000001:9090/",
    "http://hooks.invalid@127.0.0.1:9090/",
    "http://169.254.169.254/",
    "http://10.1.2.3:9090/",
    "http://[fe80::1]:9090/",
    "http://[64:ff9b::7f00:1]:9090/",
]


class _Answer(BaseHTTPRequestHandler):
    def do_POST(self):
        self.server.hits += 1
        status, body = self.server.answer
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def target():
    with loopback_server(_Answer, hits=0, answer=(200, b"{}")) as httpd:
        yield httpd


def _source(service, base_url: str) -> PrometheusSource:
    return source_create(
        name="prom", service=service, base_url=base_url, engine_selector='job="vllm"'
    )


@pytest.mark.parametrize("url", SPELLINGS)
def test_an_internal_base_url_is_refused_at_save_naming_the_field(service, url):
    with pytest.raises(ValidationError) as caught:
        _source(service, url)
    assert "base_url" in caught.value.message_dict
    assert not PrometheusSource.objects.exists()


def test_a_team_member_sees_the_refusal_on_the_form(client, owner, service):
    client.force_login(owner)
    response = client.post(
        "/collectors/prometheus/new/",
        {"name": "p", "service": service.pk, "base_url": "http://2130706433:9090",
         "engine": "vllm", "engine_selector": 'job="vllm"', "step_s": 15, "interval_s": 60,
         "backfill_hours": 6},
    )  # fmt: skip
    assert response.status_code == 200
    assert "127.0.0.1 is a loopback address" in response.content.decode()
    assert not PrometheusSource.objects.exists()


def test_a_source_already_stored_with_a_loopback_url_is_refused_at_sync(service, target, settings):
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["127.0.0.1/32"]
    source = _source(service, target.url)
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = []  # e.g. the allow-list was narrowed since
    target.answer = (200, json.dumps({"status": "error", "error": SECRET}).encode())
    outcome = source_sync(source_id=source.pk)
    assert target.hits == 0
    assert "127.0.0.1 is a loopback address" in outcome.error
    assert SECRET not in PrometheusSource.objects.get().last_error


@pytest.mark.parametrize(
    "answer",
    [
        (500, SECRET.encode()),
        (200, f"<html>{SECRET}</html>".encode()),
        (400, json.dumps({"status": "error", "errorType": "bad_data", "error": SECRET}).encode()),
        (422, json.dumps({"status": "error", "errorType": SECRET, "error": "x"}).encode()),
        (200, json.dumps({"status": "success", "data": {"resultType": SECRET}}).encode()),
    ],
    ids=["500-text", "html", "prometheus-error-text", "unknown-error-type", "not-a-matrix"],
)
def test_a_failing_targets_answer_is_never_stored(service, target, settings, answer):
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["127.0.0.1/32"]
    target.answer = answer
    source = _source(service, target.url)
    outcome = source_sync(source_id=source.pk)
    source.refresh_from_db()
    assert not outcome.ok
    assert f"answered {answer[0]}" in source.last_error
    assert SECRET not in source.last_error and SECRET not in source.host.last_error
