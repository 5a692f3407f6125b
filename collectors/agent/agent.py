"""The agent loop: every interval, read GPUs, scrape endpoints, build a batch, deliver it.

Usable in-process too (a demo runner can start `Agent(config).run(stop_event)` in a thread).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from . import __version__
from .batch import new_batch
from .config import AgentConfig
from .nvml import NvmlReader
from .push import Delivery, Outcome, Pusher
from .scrape import Scraper
from .serve import BatchServer, LatestBatch
from .spool import Spool

log = logging.getLogger(__name__)


class Source(Protocol):
    """Something that observes instead of NVML (the demo's simulated host, `demo.agent`):
    each step returns this interval's GPU rows, scrapes and per-request rows."""

    def step(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]: ...


class Agent:
    def __init__(
        self,
        config: AgentConfig,
        *,
        nvml: NvmlReader | None = None,
        scraper: Scraper | None = None,
        source: Source | None = None,
        delivery: Delivery | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        self.clock = clock
        self.scraper = scraper or Scraper(timeout=config.scrape_timeout)
        self.source = source
        # A source replaces NVML: a demo host has no GPU to read.
        self.nvml = None if source is not None else (nvml or NvmlReader())
        if delivery is None and config.push_enabled:
            assert config.spool_dir is not None and config.token
            delivery = Delivery(
                Pusher(config.ingest_url, config.token, timeout=config.push_timeout),
                Spool(config.spool_dir, config.spool_max_bytes),
            )
        self.delivery = delivery
        self.latest = LatestBatch()
        self.server: BatchServer | None = None

    def collect(self) -> dict[str, Any]:
        """One batch of everything observable now."""
        gpus: list[dict[str, Any]] = []
        scrapes: list[dict[str, Any]] = []
        requests: list[dict[str, Any]] = []
        if self.source is not None:
            gpus, scrapes, requests = self.source.step()
        elif self.nvml is not None:
            gpus = self.nvml.read()
        targets = [*self.config.engines, *([self.config.dcgm] if self.config.dcgm else [])]
        scrapes = scrapes + self.scraper.scrape_all(targets)
        batch = new_batch(host=self.config.host, gpus=gpus, scrapes=scrapes, requests=requests)
        self.latest.set(batch)
        return batch

    def tick(self) -> tuple[dict[str, Any], Outcome | None]:
        """Collect one batch and hand it to delivery (None when not pushing)."""
        batch = self.collect()
        outcome = self.delivery.submit(batch) if self.delivery is not None else None
        log.debug(
            "batch %s: %d gpu row(s), %d scrape(s), %d request(s) -> %s",
            batch["batch_id"],
            len(batch["gpus"]),
            len(batch["scrapes"]),
            len(batch["requests"]),
            outcome.value if outcome else "not pushed",
        )
        return batch, outcome

    def start_server(self) -> BatchServer | None:
        if self.config.serve is not None and self.server is None:
            self.server = BatchServer(self.config.serve, self.latest).start()
        return self.server

    def run(
        self,
        stop: threading.Event,
        *,
        on_batch: Callable[[dict[str, Any]], None] | None = None,
        max_ticks: int | None = None,
    ) -> None:
        """Tick every `interval` seconds until `stop` is set; replays the spool in between
        when its backoff expires, so recovery does not wait for the next tick."""
        self.start_server()
        interval = self.config.interval
        next_tick = self.clock()
        ticks = 0
        log.info(
            "agent %s for host %s: every %.3g s, %d engine(s)%s%s%s",
            __version__,
            self.config.host,
            interval,
            len(self.config.engines),
            ", dcgm" if self.config.dcgm else "",
            f", observed by {type(self.source).__name__}" if self.source else "",
            f", pushing to {self.config.server}" if self.delivery else ", not pushing",
        )
        try:
            while not stop.is_set():
                now = self.clock()
                if now >= next_tick:
                    try:
                        batch, _ = self.tick()
                    except Exception:  # e.g. a full disk under the spool: keep the agent alive
                        log.exception("collecting or delivering a batch failed; next interval")
                    else:
                        if on_batch is not None:
                            on_batch(batch)
                    ticks += 1
                    if max_ticks is not None and ticks >= max_ticks:
                        return
                    # Skip missed ticks rather than bursting after a stall.
                    next_tick += interval * max(1, int((self.clock() - next_tick) // interval) + 1)
                elif self.delivery is not None and self.delivery.retry_due():
                    try:
                        self.delivery.drain()
                    except Exception:
                        log.exception("replaying the spool failed; trying again next interval")
                wake = next_tick
                if self.delivery is not None and self.delivery.retry_at is not None:
                    wake = min(wake, self.delivery.retry_at)
                stop.wait(max(0.0, wake - self.clock()))
        finally:
            self.close()

    def close(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        if self.nvml is not None:
            self.nvml.close()
