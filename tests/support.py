"""Test support that is neither a fixture nor a factory: paths, settings values, a browser
login and screenshots, a loopback HTTP server, a hand-moved clock, Celery's cached connections.
A library module (tests import it); fixtures stay in conftest.py, and no test module imports
another."""

import gzip
import io
import os
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from django.db import connection, transaction
from django.db.migrations.executor import MigrationExecutor

from demo.engine_profile import EngineProfile

FIXTURES = Path(__file__).resolve().parent / "fixtures"
REAL = FIXTURES / "real"  # files users sent, as they sent them
# A real vLLM bench result without per-request arrays, and the project's 400-request one with them.
VLLM = REAL / "vllm-bench" / "er0080-sweep-max_num_seqs4-run0.json"
VLLM_ARRAYS = FIXTURES / "loadtests" / "vllm-bench-serve-c16.json"

# The tests' own HTTP servers listen on loopback, which the outbound guard refuses unless
# allow-listed (core.outbound); tests that call them allow-list it, as a deployment would.
LOOPBACK_CIDRS = ["127.0.0.0/8", "::1/128"]

# Shaped like the demo's support-chat-7b baseline; tests set its rate and end-to-end tail.
CHAT_7B_PROFILE = EngineProfile(
    ttft_p50_ms=85, ttft_p99_ms=400, tpot_p50_ms=12.5, tpot_p99_ms=21, prompt_tokens=350,
    output_tokens=48,
)  # fmt: skip


def browser_login(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")


def sideways_tables(page) -> list[tuple[int, int]]:
    """(scroll width, visible width) of each table that scrolls sideways (wider than its box)."""
    return page.evaluate(
        "Array.from(document.querySelectorAll('.table-wrap'))"
        ".map(e => [e.scrollWidth, e.clientWidth]).filter(([s, c]) => s > c + 1)"
    )


def screenshot(page, name: str) -> None:
    """Keep a full-page screenshot in $PERFHUB_SCREENSHOTS, when set."""
    if folder := os.environ.get("PERFHUB_SCREENSHOTS"):
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@contextmanager
def loopback_server(handler, **attributes) -> Iterator[ThreadingHTTPServer]:
    """`handler`'s server on a free loopback port, served by a thread until the block ends:
    `.url` (no path), and `attributes` set on it for the handler (`self.server.<name>`)."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.url = f"http://127.0.0.1:{httpd.server_port}"
    for name, value in attributes.items():
        setattr(httpd, name, value)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()


class Served:
    """A loopback HTTP server answering every GET with `body` (changeable between pulls)."""

    def __init__(self) -> None:
        self.body = b""
        self.content_type = "text/plain; version=0.0.4"
        served = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200)
                self.send_header("Content-Type", served.content_type)
                self.send_header("Content-Length", str(len(served.body)))
                self.end_headers()
                self.wfile.write(served.body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/metrics"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def drop_celery_connections() -> None:
    """A producer pool or backend made earlier (by another test, for another broker URL)
    would keep publishing there: make the app build them again from its current config."""
    from perfhub.celery import app  # here: most users of this module need no Celery app

    if app._pool is not None:
        app._pool.force_close_all()
        app._pool = None
    app.amqp._producer_pool = None
    app.__dict__.pop("backend", None)


class StepClock:
    """A clock a test moves by hand (`clock.now = ...`), for code that takes `clock=`."""

    def __init__(self, start: float = 1_764_400_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def zipped(members: dict[str, bytes]) -> bytes:
    """A .zip of `members` (path -> content), as a user zips a results folder."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buf.getvalue()


def tarred(members: dict[str, bytes], *, gz: bool = False) -> bytes:
    """A .tar (or .tar.gz) of `members` (path -> content)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue()) if gz else buf.getvalue()


def migrate(targets: list[tuple[str, str]]):
    """The database migrated to `targets` (forwards or back); the apps of that state, for a
    migration test to write rows as they were then. The `latest_schema_restored` fixture
    migrates back to the newest state afterwards."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def old_service(apps, *, engine: str = "vllm"):
    """A service (with its team) written through a migration state's `apps`: the smallest one
    every historical schema since dossiers 0001 accepts."""
    team = apps.get_model("dossiers", "Team").objects.create(slug="t", name="T")
    return apps.get_model("dossiers", "Service").objects.create(
        slug="s", name="S", team=team, model_name="m", model_params_b=7, engine=engine,
        gpu_model="H100", gpu_hour_price=2,
    )  # fmt: skip


def module_rows(django_db_blocker, build):
    """For a module-scoped fixture: `yield from module_rows(django_db_blocker, build)` yields
    what `build()` wrote once for its module's tests to read, in a transaction rolled back when
    the module ends (as Django's `setUpTestData` does); each test's own changes roll back to it.
    The tests still ask for `db` as usual."""
    with django_db_blocker.unblock():
        atomic = transaction.atomic()
        atomic.__enter__()
        built = build()
    try:
        yield built
    finally:
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            atomic.__exit__(None, None, None)
