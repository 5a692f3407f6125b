"""The production shape as local processes: what `make smoke` and `make chaos` share.

docker-compose.yml's application services (migrate, web, worker, beat) are started with the
compose file's own `command`s and environment keys, as local processes (each in a session of
its own, so stopping it stops gunicorn's and Celery's children), logging to files in a
temporary directory. `Stack` holds those processes, the steps' timing and the logs; `Receiver`
is a loopback webhook sink; `wait_for` polls a probe. Nothing here knows what a run checks.

The process helpers (`wait_for`, `free_port`, `start_process`, `stop_processes`,
`start_receiver`) are also the tests' (tests/promstack.py, tests/vllm_engine/harness.py,
tests/test_alert_pipeline.py): one implementation of starting a binary and waiting for it.
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import requests
import yaml

ROOT = Path(__file__).resolve().parent.parent
COMPOSE_FILE = ROOT / "docker-compose.yml"
APP_SERVICES = ("migrate", "web", "worker", "beat")


class StackFailure(Exception):
    pass


def check(condition: object, message: str) -> None:
    if not condition:
        raise StackFailure(message)


def wait_for(what: str, probe: Callable[[], object], timeout: float, every: float = 1.0):
    """Call `probe` until it returns something truthy; its last exception or value says why not."""
    deadline = time.monotonic() + timeout
    last: object = None
    while time.monotonic() < deadline:
        try:
            result = probe()
        except (requests.RequestException, StackFailure, KeyError, ValueError) as exc:
            last = exc
        else:
            if result:
                return result
            last = result
        time.sleep(every)
    raise StackFailure(f"{what}: not within {timeout:.0f} s (last: {last!r:.300})")


def free_port(taken: set[int] | None = None, candidates: Iterable[int] = (0,)) -> int:
    """A free loopback port: the first of `candidates` not in `taken` that binds (0: any the OS
    picks); it joins `taken`."""
    for port in candidates:
        if port and taken is not None and port in taken:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            found = s.getsockname()[1]
        if taken is not None:
            taken.add(found)
        return found
    raise StackFailure(f"no free loopback port among {list(candidates)}")


def start_process(
    cmd: list[str], log: Path, *, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.Popen:
    """`cmd` in the background, its output appended to `log`, in a session of its own: stopping
    it stops its children (gunicorn's and Celery's)."""
    with log.open("ab") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop_processes(
    procs: Iterable[subprocess.Popen], sig: int = signal.SIGTERM, timeout: float = 15
) -> None:
    """Stop each process and its children (`sig`); SIGKILL what outlives `timeout`."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
    deadline = time.monotonic() + timeout
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # Its children may outlive a killed leader (Celery's pool): none may stay behind.
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


# ------------------------------------------------------------------------------ compose


def compose_services() -> dict[str, dict]:
    """docker-compose.yml's services, anchors and merges resolved."""
    return yaml.safe_load(COMPOSE_FILE.read_text())["services"]


def compose_commands() -> dict[str, list[str]]:
    """The command each application service runs: what the stack starts."""
    services = compose_services()
    return {name: list(services[name]["command"]) for name in APP_SERVICES}


def compose_environment_keys() -> set[str]:
    services = compose_services()
    return {key for name in APP_SERVICES for key in services[name]["environment"]}


# ------------------------------------------------------------------------------ receiver


class Receiver(BaseHTTPRequestHandler):
    """The webhook receiver: records every JSON body posted to it."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        with self.server.lock:
            self.server.bodies.append(json.loads(body))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def start_receiver() -> ThreadingHTTPServer:
    """A webhook sink on a free loopback port, serving in a thread; `.bodies` are the posts."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    server.bodies, server.lock = [], threading.Lock()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ------------------------------------------------------------------------------ the processes


class Stack:
    """Compose's processes on this machine, with their logs under a temporary directory."""

    prefix = "perfhub-stack-"

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.tmp = Path(tempfile.mkdtemp(prefix=self.prefix))
        self.procs: dict[str, subprocess.Popen] = {}
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.times: list[tuple[str, float]] = []

    def log(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {text}", flush=True)

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.monotonic()
        self.log(f"{name} ...")
        try:
            yield
        except StackFailure as exc:
            raise StackFailure(f"step '{name}': {exc}") from None
        except Exception as exc:
            raise StackFailure(f"step '{name}': {type(exc).__name__}: {exc}") from exc
        took = time.monotonic() - began
        self.times.append((name, took))
        self.log(f"{name}: ok ({took:.1f} s)")

    def env(self, *, database_url: str, redis_url: str, timings: dict[str, str]) -> dict[str, str]:
        """Compose's environment with values for this machine, plus shortened timings."""
        compose = {
            "DATABASE_URL": database_url,
            "REDIS_URL": redis_url,
            "SECRET_KEY": secrets.token_urlsafe(50),
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "CSRF_TRUSTED_ORIGINS": self.base,
            "SITE_URL": self.base,
            "SECURE_COOKIES": "false",
            "STATIC_MANIFEST": "true",
        }
        missing = compose_environment_keys() - set(compose)
        check(not missing, f"docker-compose.yml sets {sorted(missing)}, which the stack does not")
        dropped = {"DEBUG", "LOG_FORMAT", "DJANGO_SETTINGS_MODULE", "DJANGO_ALLOW_ASYNC_UNSAFE"}
        env = {k: v for k, v in os.environ.items() if k not in dropped}
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        env.update(compose)
        env.update(timings)
        env.update(
            DEBUG="false",
            PERFHUB_VAR_DIR=str(self.tmp / "var"),
            STATIC_ROOT=str(self.tmp / "static"),
            BIND=f"127.0.0.1:{self.port}",
            WEB_WORKERS="2",
            WORKER_CONCURRENCY="2",
            HOSTNAME=socket.gethostname(),
        )
        self._env = env
        return env

    def run(
        self, name: str, cmd: list[str], env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess:
        result = subprocess.run(
            cmd, cwd=ROOT, env=env or self._env, capture_output=True, text=True, timeout=timeout
        )
        (self.tmp / f"{name}.log").write_text(result.stdout + result.stderr)
        check(
            result.returncode == 0,
            f"`{shlex.join(cmd)}` exited {result.returncode}: {result.stderr[-1500:]}",
        )
        return result

    def spawn(self, name: str, cmd: list[str]) -> subprocess.Popen:
        """A short-lived command run in the background; its output goes to its log."""
        log = (self.tmp / f"{name}.log").open("ab")
        return subprocess.Popen(cmd, cwd=ROOT, env=self._env, stdout=log, stderr=subprocess.STDOUT)

    def start(self, name: str, cmd: list[str], env: dict[str, str] | None = None) -> None:
        self.procs[name] = start_process(cmd, self.tmp / f"{name}.log", env=env or self._env)

    def alive(self) -> None:
        for name, proc in self.procs.items():
            check(proc.poll() is None, f"{name} exited with {proc.returncode}")

    def stop(self, name: str, sig: int = signal.SIGTERM, timeout: float = 15) -> None:
        """Stop one process and its children; SIGKILL when it outlives `timeout`."""
        stop_processes([self.procs.pop(name)], sig, timeout)

    def stop_all(self) -> None:
        procs = list(self.procs.values())
        self.procs.clear()
        stop_processes(procs)

    def log_lines(self, name: str) -> list[dict]:
        lines = []
        for line in (self.tmp / f"{name}.log").read_text(errors="replace").splitlines():
            if line.startswith("{"):
                with suppress(ValueError):  # a line that only starts like JSON
                    lines.append(json.loads(line))
        return lines

    def tails(self) -> str:
        out = []
        for path in sorted(self.tmp.glob("*.log")):
            lines = path.read_text(errors="replace").splitlines()[-15:]
            out.append(f"--- {path.name} (last {len(lines)} lines)\n" + "\n".join(lines))
        return "\n".join(out)
