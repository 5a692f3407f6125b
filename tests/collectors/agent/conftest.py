"""Fixtures for the agent: a live ingest server, a /metrics server, a fake NVML."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.factories.agent import TOKEN


@dataclass
class IngestState:
    """What the test ingest server does and what it stored (batch ids, in arrival order)."""

    fail_first: int = 0  # answer 503 to the first N pushes
    store_before_failing: bool = False  # store, then answer 503 anyway (a lost response)
    reject_with: int | None = None  # answer this status to every push (e.g. 400)
    retry_after: str | None = None
    warnings: list[str] = field(default_factory=list)  # said with every 202
    attempts: int = 0
    stored: list[str] = field(default_factory=list)
    duplicates: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _ingest_handler(state: IngestState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            if self.path != "/api/v1/ingest/":
                return self._answer(404, {"detail": "Not found."})
            if self.headers.get("Authorization") != f"Token {TOKEN}":
                return self._answer(401, {"detail": "Invalid token."})
            batch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with state.lock:
                state.attempts += 1
                if state.reject_with is not None:
                    return self._answer(state.reject_with, {"gpus": ["0: util: not a number"]})
                failing = state.attempts <= state.fail_first
                if failing and not state.store_before_failing:
                    return self._answer(503, {"detail": "database unavailable"})
                if batch["batch_id"] in state.stored:
                    state.duplicates += 1
                    return self._answer(200, {"duplicate": True})
                state.stored.append(batch["batch_id"])
                if failing:
                    return self._answer(503, {"detail": "stored, but the answer was lost"})
            answer: dict[str, Any] = {"gpus": len(batch["gpus"]), "scrapes": len(batch["scrapes"])}
            if state.warnings:
                answer["warnings"] = state.warnings
            return self._answer(202, answer)

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            if state.retry_after and status in (429, 503):
                self.send_header("Retry-After", state.retry_after)
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


def _serve(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


@pytest.fixture
def ingest() -> Iterator[tuple[str, IngestState]]:
    """A live PerfHub-like ingest endpoint on 127.0.0.1: (base URL, state)."""
    state = IngestState()
    for url in _serve(_ingest_handler(state)):
        yield url, state


@dataclass
class MetricsPages:
    pages: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (status, text)
    delay_s: float = 0.0


@pytest.fixture
def metrics_server() -> Iterator[tuple[str, MetricsPages]]:
    """Serves `/metrics`-like pages: (base URL, pages to fill in)."""
    pages = MetricsPages()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if pages.delay_s:
                threading.Event().wait(pages.delay_s)
            status, text = pages.pages.get(self.path, (404, "not found"))
            body = text.encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client timed out first: that is the point of the slow page

        def log_message(self, *args: Any) -> None:
            pass

    for url in _serve(Handler):
        yield url, pages


@pytest.fixture
def closed_port_url() -> str:
    """An http URL on 127.0.0.1 where nothing listens."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
