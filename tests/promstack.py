"""The real Prometheus, Alertmanager and promtool for the integration tests (Debian's packages,
installed by `.ci/run`). Each binary runs on a free loopback port in a temporary directory and
is stopped by its fixture; a test skips with the reason only when the binary is absent, and
fails instead under PERFHUB_REQUIRE_BINARIES=1 (set by `.ci/run`)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests


def binary(*names: str) -> str:
    """The first of `names` on PATH, or skip the test saying which package provides it."""
    for name in names:
        if found := shutil.which(name):
            return found
    reason = f"{' / '.join(names)} not installed (Debian: prometheus, prometheus-alertmanager)"
    if os.environ.get("PERFHUB_REQUIRE_BINARIES"):  # CI (.ci/run): never skip these
        pytest.fail(reason)
    pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(check: Callable[[], bool], *, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except requests.RequestException:
            pass
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")


class Process:
    """A binary serving HTTP on a loopback port; `url` is its base URL."""

    def __init__(self, args: list[str], port: int, workdir: Path, ready_path: str) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = workdir / "process.log"
        self._log = self.log.open("wb")
        self.proc = subprocess.Popen(args, cwd=workdir, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_until(
                lambda: self._alive() and requests.get(self.url + ready_path, timeout=1).ok,
                timeout=30,
                what=f"{Path(args[0]).name} on {self.url}",
            )
        except AssertionError:
            self.stop()
            raise AssertionError(self.log.read_text()[-2000:]) from None

    def _alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
        return True

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()


def start_prometheus(workdir: Path, config: str) -> Process:
    exe = binary("prometheus")
    port = free_port()
    (workdir / "prometheus.yml").write_text(config)
    return Process(
        [
            exe,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--log.level=warn",
        ],
        port,
        workdir,
        "/-/ready",
    )


def start_alertmanager(workdir: Path, config: str) -> Process:
    exe = binary("alertmanager", "prometheus-alertmanager")
    port = free_port()
    (workdir / "alertmanager.yml").write_text(config)
    return Process(
        [
            exe,
            f"--config.file={workdir / 'alertmanager.yml'}",
            f"--storage.path={workdir / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{port}",
            "--cluster.listen-address=",  # no gossip: one instance
            "--log.level=warn",
        ],
        port,
        workdir,
        "/-/ready",
    )


class Loopback:
    """A loopback HTTP server: GETs answer `get()` (text), POSTs append their JSON bodies."""

    def __init__(self, get: Callable[[], str] | None = None) -> None:
        self.bodies: list[dict] = []
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                outer.requests += 1
                body = (get() if get else "").encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                outer.bodies.append(json.loads(self.rfile.read(length) or b"{}"))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_port
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
