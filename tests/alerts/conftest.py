"""Fixtures for alert tests: a host, a timeline, a P99 rule, a webhook receiver. The data they
write, minute by minute with time frozen, comes from `tests.factories.alerts`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from alerts.models import Receiver, Rule
from collectors.models import Host
from tests.factories.alerts import LAG, Timeline


@pytest.fixture(autouse=True)
def _alert_settings(settings):
    settings.PERFHUB_ALERTS_EVALUATION_LAG_S = int(LAG.total_seconds())
    settings.SITE_URL = "https://perfhub.example.com"
    settings.EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"


@pytest.fixture
def host(db) -> Host:
    return Host.objects.create(name="gpu-node-01")


@pytest.fixture
def timeline(service, host, django_capture_on_commit_callbacks) -> Timeline:
    return Timeline(service, host, django_capture_on_commit_callbacks)


@pytest.fixture
def p99_rule(service) -> Rule:
    """P99 e2e above 2,000 ms for 3 minutes; resolves below 1,800 ms."""
    return Rule.objects.create(
        service=service,
        name="P99 e2e above SLO",
        kind="p99_e2e",
        threshold=2000,
        resolve_threshold=1800,
        window_s=60,
        for_s=180,
        keep_firing_for_s=0,
        min_requests=100,
    )


class Recorder(BaseHTTPRequestHandler):
    """Records JSON bodies; answers with the next status of `statuses` (then 200)."""

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        body = self.rfile.read(length)
        server = self.server
        with server.lock:
            server.bodies.append(json.loads(body))
            status = server.statuses.pop(0) if server.statuses else 200
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"ok" if status < 300 else b"receiver is down")

    def log_message(self, *args):
        pass


@pytest.fixture
def webhook_server(outbound_loopback):
    """A real HTTP server on loopback (allow-listed), in a thread: `.url`, `.bodies`,
    `.statuses`."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    server.bodies = []
    server.statuses = []
    server.lock = threading.Lock()
    server.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture
def webhook(team, webhook_server) -> Receiver:
    return Receiver.objects.create(
        team=team,
        name="oncall-webhook",
        kind="webhook",
        url=webhook_server.url,
        repeat_interval_s=3600,
    )


@pytest.fixture
def make_services(team):
    """Services with SLOs, numbered on from what exists, as many as a test needs."""
    from decimal import Decimal

    from dossiers.models import Service

    def make(n: int):
        start = Service.objects.count()
        return [
            Service.objects.create(
                slug=f"svc-{start + k}",
                name=f"Service {start + k}",
                team=team,
                model_name="Llama-3-8B",
                model_params_b=Decimal("8"),
                engine="vllm",
                gpu_model="NVIDIA H100",
                slo_p99_e2e_ms=2000,
                slo_p99_ttft_ms=300,
                slo_p99_tpot_ms=40,
                gpu_hour_price=Decimal("10"),
                price_per_mtok=Decimal("5"),
            )
            for k in range(n)
        ]

    return make
