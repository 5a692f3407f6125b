"""Send batches to `POST <server>/api/v1/ingest/`, spooling what the server cannot take now.

Outcomes (docs/contracts.md):
- 2xx: accepted; 200 `{"duplicate": true}` is a replay the server already has, also a success.
- connection error, timeout, 408, 429, 5xx: transient. The batch is spooled and replayed in order,
  with exponential backoff, reusing its batch_id so the server counts it once.
- any other 4xx (400 bad field, 401/403 token, 413 too large) and 3xx: permanent. Logged with
  the server's answer and dropped: resending the same bytes cannot succeed.

A spool that cannot be written (the disk full, read-only) does not lose the batch: it is held
in memory, behind whatever is spooled, within the same byte bound, until the server answers.
"""

from __future__ import annotations

import enum
import json
import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import requests

from . import __version__
from .errors import request_error_reason
from .spool import Spool

log = logging.getLogger(__name__)

MAX_LOGGED_BODY = 2000


class Outcome(enum.Enum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    RETRY = "retry"  # transient: keep the batch
    REJECTED = "rejected"  # permanent: drop the batch
    SPOOLED = "spooled"  # Delivery only: kept on disk for a later replay


WARNINGS_REMEMBERED = 100  # distinct server warnings, each logged once, then forgotten


@dataclass(frozen=True)
class PushResult:
    outcome: Outcome
    status: int | None
    detail: str
    retry_after: float | None = None
    warnings: tuple[str, ...] = ()  # the server stored the batch but says what looks wrong


class Pusher:
    """One HTTP attempt per call; classifies the answer, never raises for network trouble."""

    def __init__(
        self,
        url: str,
        token: str,
        *,
        timeout: float = 10.0,
        session: requests.Session | None = None,
    ) -> None:
        self.url = url
        self.timeout = timeout
        self.session = session or requests.Session()
        self._headers = {
            "Authorization": f"Token {token}",
            "Content-Type": "application/json",
            "User-Agent": f"perfhub-agent/{__version__}",
        }

    def push(self, batch: dict[str, Any]) -> PushResult:
        body = json.dumps(batch, separators=(",", ":")).encode("utf-8")
        try:
            response = self.session.post(
                self.url,
                data=body,
                headers=self._headers,
                timeout=self.timeout,
                allow_redirects=False,  # a redirected POST would silently turn into a GET
            )
        except requests.RequestException as exc:
            return PushResult(Outcome.RETRY, None, request_error_reason(exc, self.timeout))
        status = response.status_code
        text = _short(response.text)
        if 200 <= status < 300:
            answer = _json(response)
            if status == 200 and answer.get("duplicate") is True:
                return PushResult(Outcome.DUPLICATE, status, text)
            warnings = answer.get("warnings")
            said = tuple(str(w)[:500] for w in warnings) if isinstance(warnings, list) else ()
            return PushResult(Outcome.ACCEPTED, status, text, warnings=said)
        if status in (408, 429) or status >= 500:
            return PushResult(
                Outcome.RETRY, status, text, _retry_after(response.headers.get("Retry-After"))
            )
        if 300 <= status < 400:
            text = f"redirected to {response.headers.get('Location')!r}; check --server. {text}"
        return PushResult(Outcome.REJECTED, status, text)


class Delivery:
    """Pushes new batches, spools them on transient failure, replays the spool in order.

    While anything is spooled (or a retry is pending), new batches queue behind it, so the
    server always receives batches in the order they were collected.
    """

    def __init__(
        self,
        pusher: Pusher,
        spool: Spool,
        *,
        backoff_base_s: float = 1.0,
        backoff_max_s: float = 300.0,
        clock: Callable[[], float] = time.monotonic,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        self.pusher = pusher
        self.spool = spool
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.clock = clock
        self.jitter = jitter
        self.failures = 0
        self.retry_at: float | None = None if not len(spool) else clock()
        self.delivered = 0
        self.rejected = 0
        self.warned: set[str] = set()  # each server warning is logged once, not every push
        # Batches the spool could not take (its disk full), oldest first: sent after it.
        self.held: list[tuple[dict[str, Any], int]] = []

    def waiting(self) -> int:
        """Batches not delivered yet: spooled on disk or held in memory."""
        return len(self.spool) + len(self.held)

    def submit(self, batch: dict[str, Any]) -> Outcome:
        """Deliver a fresh batch now, or queue it behind the spool."""
        if self.retry_at is not None:
            self._keep(batch)
            settled = self.drain() if self.retry_due() else {}
            return settled.get(batch["batch_id"], Outcome.SPOOLED)
        result = self.pusher.push(batch)
        if result.outcome is Outcome.RETRY:
            self._keep(batch)
            self._failed(result, batch)
            return Outcome.SPOOLED
        self._settled(batch, result)
        return result.outcome

    def _keep(self, batch: dict[str, Any]) -> None:
        """Spool the batch; when the spool cannot be written, hold it in memory instead.

        Once anything is held, later batches are held too (the order stays the collection
        order), within the spool's byte bound: past it the oldest held batch is dropped.
        """
        if not self.held:
            try:
                self.spool.put(batch)
                return
            except OSError as exc:
                log.warning(
                    "spool %s cannot be written (%s): batches are held in memory until the "
                    "server takes them",
                    self.spool.directory,
                    exc,
                )
        size = len(json.dumps(batch, separators=(",", ":")))
        self.held.append((batch, size))
        total = sum(n for _, n in self.held)
        while total > self.spool.max_bytes and len(self.held) > 1:
            dropped, n = self.held.pop(0)
            total -= n
            log.warning(
                "batches held in memory are over the %d-byte limit: dropped batch %s, its data "
                "is lost",
                self.spool.max_bytes,
                dropped.get("batch_id"),
            )

    def retry_due(self) -> bool:
        return self.retry_at is not None and self.clock() >= self.retry_at

    def drain(self) -> dict[str, Outcome]:
        """Replay spooled batches oldest first until one fails; returns {batch_id: outcome} of
        those settled (delivered, duplicate or rejected) this round."""
        settled: dict[str, Outcome] = {}
        for path in self.spool.pending():
            batch = self.spool.load(path)
            if batch is None:
                continue
            result = self.pusher.push(batch)
            if result.outcome is Outcome.RETRY:
                self._failed(result, batch)
                return settled
            self._settled(batch, result)
            self.spool.remove(path)
            settled[str(batch.get("batch_id"))] = result.outcome
        while self.held:
            batch, _ = self.held[0]
            result = self.pusher.push(batch)
            if result.outcome is Outcome.RETRY:
                self._failed(result, batch)
                return settled
            self._settled(batch, result)
            self.held.pop(0)
            settled[str(batch.get("batch_id"))] = result.outcome
        if self.failures:
            log.info(
                "server %s answers again: spool replayed, %d batch(es) settled this round",
                self.pusher.url,
                len(settled),
            )
        self.failures = 0
        self.retry_at = None
        return settled

    def _settled(self, batch: dict[str, Any], result: PushResult) -> None:
        batch_id = batch.get("batch_id")
        if result.outcome is Outcome.REJECTED:
            self.rejected += 1
            log.error(
                "server REJECTED batch %s (HTTP %s) and it will not be retried; dropped. "
                "Server said: %s",
                batch_id,
                result.status,
                result.detail,
            )
            return
        self.delivered += 1
        for warning in result.warnings:
            if warning not in self.warned:
                if len(self.warned) >= WARNINGS_REMEMBERED:
                    self.warned.clear()
                self.warned.add(warning)
                log.warning("server stored batch %s but warns: %s", batch_id, warning)
        if result.outcome is Outcome.DUPLICATE:
            log.info("batch %s was already stored (replay); counted once", batch_id)
        else:
            log.debug("batch %s pushed: HTTP %s %s", batch_id, result.status, result.detail)

    def _failed(self, result: PushResult, batch: dict[str, Any]) -> None:
        self.failures += 1
        delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** (self.failures - 1))
        delay *= 1.0 + 0.1 * self.jitter()  # agents restarted together do not retry in step
        if result.retry_after is not None:
            delay = max(delay, min(result.retry_after, self.backoff_max_s))
        self.retry_at = self.clock() + delay
        why = f"HTTP {result.status}" if result.status else "no answer"
        message = "push of batch %s failed (%s: %s); %d batch(es) wait in spool %s, retry in %.1f s"
        args = (
            batch.get("batch_id"),
            why,
            result.detail,
            self.waiting(),
            self.spool.directory,
            delay,
        )
        # Loud on the first failure, quieter while the outage lasts.
        if self.failures == 1:
            log.warning(message, *args)
        else:
            log.info(message, *args)


def _json(response: requests.Response) -> dict[str, Any]:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None  # an HTTP date: rare from an API, the backoff covers it


def _short(text: str) -> str:
    text = text.strip()
    return text if len(text) <= MAX_LOGGED_BODY else text[:MAX_LOGGED_BODY] + "..."
