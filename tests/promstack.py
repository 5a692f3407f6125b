"""The real Prometheus, Alertmanager and promtool for the integration tests (Debian's packages,
installed by `.ci/run`). Each binary runs on a free loopback port in a temporary directory and
is stopped by its fixture; a test skips with the reason only when the binary is absent, and
fails instead under PERFHUB_REQUIRE_BINARIES=1 (set by `.ci/run`). Starting, waiting for and
stopping a process are deploy/stack.py's (`make smoke`'s), one implementation for both."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import requests

from deploy.stack import StackFailure, free_port, start_process, stop_processes, wait_for


def binary(*names: str) -> str:
    """The first of `names` on PATH, or skip the test saying which package provides it."""
    for name in names:
        if found := shutil.which(name):
            return found
    reason = f"{' / '.join(names)} not installed (Debian: prometheus, prometheus-alertmanager)"
    if os.environ.get("PERFHUB_REQUIRE_BINARIES"):  # CI (.ci/run): never skip these
        pytest.fail(reason)
    pytest.skip(reason)


def promtool(*args: str) -> subprocess.CompletedProcess:
    """Run promtool (skips or fails like `binary` when it is absent)."""
    return subprocess.run([binary("promtool"), *args], capture_output=True, text=True, timeout=60)


class Process:
    """A binary serving HTTP on a loopback port; `url` is its base URL."""

    def __init__(self, args: list[str], port: int, workdir: Path, ready_path: str) -> None:
        self.url = f"http://127.0.0.1:{port}"
        self.log = workdir / "process.log"
        self.proc = start_process(args, self.log, cwd=workdir, env=None)
        try:
            wait_for(
                f"{Path(args[0]).name} on {self.url}",
                lambda: self._alive() and requests.get(self.url + ready_path, timeout=1).ok,
                timeout=30,
                every=0.2,
            )
        except StackFailure:
            self.stop()
            raise AssertionError(self.log.read_text()[-2000:]) from None

    def _alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
        return True

    def stop(self) -> None:
        stop_processes([self.proc], timeout=10)


def _start(exe: str, workdir: Path, config_name: str, config: str, *flags: str) -> Process:
    """`exe` with `config` written to `config_name`, on a free port, logging warnings only."""
    port = free_port()
    (workdir / config_name).write_text(config)
    args = [exe, f"--config.file={workdir / config_name}", *flags]
    args += [f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    return Process(args, port, workdir, "/-/ready")


def start_prometheus(workdir: Path, config: str) -> Process:
    return _start(
        binary("prometheus"), workdir, "prometheus.yml", config,
        f"--storage.tsdb.path={workdir / 'data'}",
    )  # fmt: skip


def start_alertmanager(workdir: Path, config: str) -> Process:
    return _start(
        binary("alertmanager", "prometheus-alertmanager"), workdir, "alertmanager.yml", config,
        f"--storage.path={workdir / 'am-data'}",
        "--cluster.listen-address=",  # no gossip: one instance
    )  # fmt: skip


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
