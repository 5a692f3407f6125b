"""Pull mode: serve the latest batch over HTTP (`GET /batch`), for PerfHub to fetch.

A pull that sees the same batch twice is harmless: the server deduplicates on batch_id.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import __version__

log = logging.getLogger(__name__)


class LatestBatch:
    """The most recent batch, shared between the collecting loop and the HTTP threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._body: bytes | None = None

    def set(self, batch: dict[str, Any]) -> None:
        body = json.dumps(batch, separators=(",", ":")).encode("utf-8")
        with self._lock:
            self._body = body

    def body(self) -> bytes | None:
        with self._lock:
            return self._body


class BatchServer:
    """A small threaded HTTP server on `addr`, run in a daemon thread."""

    def __init__(self, addr: tuple[str, int], latest: LatestBatch) -> None:
        handler = type("Handler", (_Handler,), {"latest": latest})
        self.httpd = ThreadingHTTPServer(addr, handler)
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self.httpd.serve_forever,
            kwargs={"poll_interval": 0.1},  # how quickly stop() returns
            name="perfhub-agent-serve",
            daemon=True,
        )

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.httpd.server_address[:2]
        return str(host), int(port)

    def start(self) -> BatchServer:
        self._thread.start()
        host, port = self.address
        log.info("serving the latest batch on http://%s:%d/batch", host, port)
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    latest: LatestBatch
    server_version = f"perfhub-agent/{__version__}"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/batch":
            body = self.latest.body()
            if body is None:
                self._send(503, {"detail": "no batch collected yet"}, retry_after="5")
            else:
                self._send_bytes(200, body)
        elif path == "/healthz":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"detail": "not found; GET /batch"})

    def _send(self, status: int, payload: dict[str, Any], retry_after: str | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode("utf-8"), retry_after)

    def _send_bytes(self, status: int, body: bytes, retry_after: str | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        if retry_after:
            self.send_header("Retry-After", retry_after)
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("serve: %s - %s", self.address_string(), format % args)
