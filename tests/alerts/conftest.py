"""Fixtures for alert tests: real collectors data written minute by minute, time frozen.

`feed` writes raw request / GPU / scrape-window rows through collectors' storage path and rolls
them up with collectors' own `rollup_host_minutes`, so evaluation reads exactly what it would
read in production. `Timeline.tick(i)` evaluates at the moment minute `i` has closed and the
evaluation lag has passed, with time frozen there by time_machine.
"""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import time_machine

from alerts import services
from alerts.models import Receiver, Rule
from collectors import storage
from collectors.models import GpuSample, Host, RequestSample, ScrapeWindow
from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS, WINDOW_FIELDS, epoch_minute
from collectors.services.rollups import rollup_host_minutes

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LAG = timedelta(seconds=120)
REQUESTS_PER_MINUTE = 120


def minute(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def feed(
    service,
    host: Host,
    i: int,
    *,
    e2e_ms: float | None = None,
    requests: int = REQUESTS_PER_MINUTE,
    gpu: dict | None = None,
    gauges: dict | None = None,
) -> None:
    """One minute of data for `service` on `host`: requests, GPU samples, a scrape window."""
    start = minute(i)
    if e2e_ms is not None:
        spacing = 59.0 / max(requests, 1)
        rows = [
            (service.pk, host.pk, start + timedelta(seconds=k * spacing), e2e_ms / 10,
             e2e_ms / 100, e2e_ms, 1.0, 500, 200, True)
            for k in range(requests)
        ]  # fmt: skip
        storage.bulk_insert(RequestSample, REQUEST_FIELDS, rows)
    if gpu is not None:
        g = {"util": None, "sm_active": None, **gpu}
        rows = [
            (host.pk, start + timedelta(seconds=s), 0, "GPU-0", "NVIDIA H100", g["util"], 0.5,
             1, 2, 500.0, 60.0, 1980.0, g["sm_active"], None, None)
            for s in (5, 35)
        ]  # fmt: skip
        storage.bulk_insert(GpuSample, GPU_FIELDS, rows)
    if gauges is not None:
        rows = [
            (host.pk, service.pk, "vllm", start + timedelta(seconds=s - 15),
             start + timedelta(seconds=s), 15.0, {}, {}, {}, gauges, False)
            for s in (15, 30, 45)
        ]  # fmt: skip
        storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, rows)
    rollup_host_minutes(host_id=host.pk, minutes=[epoch_minute(start)])


def evaluation_time(i: int) -> datetime:
    """When minute `i` is the last closed minute of an evaluation (lag included)."""
    return minute(i + 1) + LAG


class Timeline:
    def __init__(self, service, host, capture):
        self.service = service
        self.host = host
        self.capture = capture

    def tick(self, i: int, **data):
        """Feed minute i (when data is given), then evaluate at its closing time."""
        if data:
            feed(self.service, self.host, i, **data)
        when = evaluation_time(i) + timedelta(seconds=7)  # mid-minute: alignment is tested
        with time_machine.travel(when, tick=False), self.capture(execute=True):
            return services.evaluate_all(when)

    def run(self, values: list[float | None], start: int = 0, **extra):
        reports = []
        for offset, value in enumerate(values):
            reports.append(self.tick(start + offset, e2e_ms=value, **extra))
        return reports


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
