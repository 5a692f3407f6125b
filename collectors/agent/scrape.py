"""Fetch engine and dcgm-exporter `/metrics` pages, sending the text as scraped.

The server parses (docs/contracts.md), so the agent never interprets the exposition. A failed
scrape is logged and skipped; the rest of the batch goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import requests

from .batch import rfc3339
from .config import ScrapeTarget
from .errors import request_error_reason

log = logging.getLogger(__name__)

# Ask for the classic text format (what the server's parser reads), not OpenMetrics.
ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
MAX_EXPOSITION_BYTES = 16 * 1024 * 1024


class ScrapeError(Exception):
    pass


class Scraper:
    """Scrapes targets with a timeout; logs a target's first failure loudly, repeats quietly."""

    def __init__(
        self,
        *,
        timeout: float = 5.0,
        session: requests.Session | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        max_bytes: int = MAX_EXPOSITION_BYTES,
    ) -> None:
        self.timeout = timeout
        self.session = session or requests.Session()
        self._now = now
        self._max_bytes = max_bytes
        self._failing: set[ScrapeTarget] = set()

    def scrape_all(self, targets: Iterable[ScrapeTarget]) -> list[dict[str, Any]]:
        results = []
        for target in targets:
            item = self.scrape(target)
            if item is not None:
                results.append(item)
        return results

    def scrape(self, target: ScrapeTarget) -> dict[str, Any] | None:
        """One `scrapes` row, or None (logged) when the target did not answer with a page."""
        ts = rfc3339(self._now())
        try:
            text = self._fetch(target.url)
        except ScrapeError as exc:
            if target in self._failing:
                log.debug("scrape %s %s still failing: %s", target.source, target.url, exc)
            else:
                self._failing.add(target)
                log.warning(
                    "scrape %s for %s at %s failed: %s; skipped this round",
                    target.source,
                    target.service,
                    target.url,
                    exc,
                )
            return None
        if target in self._failing:
            self._failing.discard(target)
            log.info("scrape %s at %s answers again", target.source, target.url)
        return {"ts": ts, "service": target.service, "source": target.source, "exposition": text}

    def _fetch(self, url: str) -> str:
        try:
            with self.session.get(
                url, timeout=self.timeout, headers={"Accept": ACCEPT}, stream=True
            ) as response:
                if response.status_code != 200:
                    raise ScrapeError(f"HTTP {response.status_code}")
                body = bytearray()
                for chunk in response.iter_content(chunk_size=65536):
                    body.extend(chunk)
                    if len(body) > self._max_bytes:
                        raise ScrapeError(f"page larger than {self._max_bytes} bytes")
        except requests.RequestException as exc:
            raise ScrapeError(request_error_reason(exc, self.timeout)) from None
        # The exposition format is UTF-8 by definition, whatever the Content-Type says.
        return body.decode("utf-8", "replace")
