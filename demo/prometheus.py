"""The demo's Prometheus path (`manage.py run_demo --prometheus`): one simulated vLLM engine
serves `/metrics` on loopback, a real `prometheus` (Debian's package) scrapes it, and a
Prometheus source reads it back into PerfHub like any team's Prometheus would be read.

Everything lives under the var directory (`var/prometheus/`); Prometheus keeps its data there
between runs, so the source's cursor carries on where it stopped.
"""

from __future__ import annotations

import random
import shutil
import socket
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
from django.conf import settings

from collectors.models import PrometheusSource
from collectors.services.prometheus import source_create
from demo.engine_profile import EngineProfile
from demo.simulator import FakeVllmEngine
from dossiers.models import Service

SOURCE_NAME = "demo-prometheus"
SCRAPE_S = 5


class DemoPrometheusError(Exception):
    """The Prometheus path cannot start; the message says why in one line."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class DemoPrometheus:
    def __init__(
        self,
        service: Service,
        workdir: Path,
        profile: EngineProfile | None,
        *,
        scrape_s: int = SCRAPE_S,
    ) -> None:
        self.exe = shutil.which("prometheus")
        if self.exe is None:
            raise DemoPrometheusError(
                "--prometheus needs the `prometheus` binary (apt-get install prometheus)"
            )
        self.service = service
        self.scrape_s = scrape_s
        self.workdir = workdir
        self.engine = FakeVllmEngine(
            service.slug, profile=profile, rng=random.Random(7), start=time.time()
        )
        self.lock = threading.Lock()
        self.server: ThreadingHTTPServer | None = None
        self.proc: subprocess.Popen | None = None

    def start(self) -> PrometheusSource:
        self.workdir.mkdir(parents=True, exist_ok=True)
        demo = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                with demo.lock:
                    demo.engine.advance(time.time())
                    demo.engine.take_requests(0)  # only the counters matter here
                    body = demo.engine.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        port = _free_port()
        config = self.workdir / "prometheus.yml"
        config.write_text(
            f"global:\n  scrape_interval: {self.scrape_s}s\nscrape_configs:\n"
            f"  - job_name: demo-vllm\n    static_configs:\n"
            f'      - targets: ["127.0.0.1:{self.server.server_port}"]\n'
        )
        log = (self.workdir / "prometheus.log").open("ab")
        self.proc = subprocess.Popen(
            [
                self.exe, f"--config.file={config}", f"--storage.tsdb.path={self.workdir / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}", "--storage.tsdb.retention.time=2d",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        base_url = f"http://127.0.0.1:{port}"
        self._wait_ready(base_url)
        # The source reads this loopback Prometheus through the outbound guard, which refuses
        # loopback unless allow-listed: this process allow-lists the one address it started,
        # as an operator would an internal Prometheus (PERFHUB_OUTBOUND_ALLOW_CIDRS).
        allowed = list(settings.PERFHUB_OUTBOUND_ALLOW_CIDRS)
        if "127.0.0.1/32" not in allowed:
            settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = [*allowed, "127.0.0.1/32"]
        return self._source(base_url)

    def _wait_ready(self, base_url: str) -> None:
        for _ in range(100):
            if self.proc.poll() is not None:
                raise DemoPrometheusError(
                    f"prometheus exited; see {self.workdir / 'prometheus.log'}"
                )
            try:
                if requests.get(base_url + "/-/ready", timeout=1).ok:
                    return
            except requests.RequestException:
                pass
            time.sleep(0.2)
        raise DemoPrometheusError("prometheus did not become ready in 20 s")

    def _source(self, base_url: str) -> PrometheusSource:
        source = PrometheusSource.objects.filter(name=SOURCE_NAME).first()
        if source is None:
            return source_create(
                name=SOURCE_NAME, service=self.service, base_url=base_url,
                engine_selector='job="demo-vllm"', step_s=self.scrape_s, interval_s=15,
                backfill_hours=1,
            )  # fmt: skip
        PrometheusSource.objects.filter(pk=source.pk).update(
            base_url=base_url, service=self.service, enabled=True
        )
        return source

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.server is not None:
            self.server.shutdown()
