"""One simulated host: fake GPUs plus one fake engine per service, stepped to give one
batch's lists (gpus, scrapes, requests)."""

from __future__ import annotations

import logging
import math
import random
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from demo.engine_profile import (
    EngineProfile,
)
from demo.simulator.engine import FakeVllmEngine, Slowdown, rfc3339
from demo.simulator.gpus import FakeGpus

log = logging.getLogger("demo.simulator")  # the name it had as one module


class Simulator:
    """Fake GPUs plus one fake engine per service (vLLM unless `engines` names another);
    `step()` gives one batch's lists."""

    def __init__(
        self,
        *,
        host: str,
        services: list[str],
        gpus: int = 2,
        qps: float = 12.0,
        profiles: dict[str, EngineProfile] | None = None,
        engines: dict[str, str] | None = None,
        slowdown_after: float | None = None,
        slowdown_for: float | None = None,
        slowdown_factor: float = 4.0,
        slowdown_share: float = 0.1,
        max_requests_per_batch: int = 1000,
        seed: int | None = None,
        warmup_s: float = 10.0,
        start_at: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        profiles, engines = profiles or {}, engines or {}
        unknown = sorted((set(profiles) | set(engines)) - set(services))
        if unknown:
            raise ValueError(
                f"profiles or engines for services not simulated here: {', '.join(unknown)}"
            )
        self.clock = clock
        self.rng = random.Random(seed)
        self.started = clock()
        # The engines "started" warmup_s ago, so even the first batch carries traffic; or at
        # `start_at` (epoch seconds), where a seeded history ends: no request finishes before
        # it, so none rewrites a seeded minute (a roll-up recomputes a minute from raw rows).
        start = self.started - warmup_s if start_at is None else start_at
        self.engines = [
            FakeVllmEngine(
                slug,
                qps=qps,
                profile=profiles.get(slug),
                rng=self.rng,
                start=start,
                phase_s=i * 1800.0,
                engine=engines.get(slug, "vllm"),
            )
            for i, slug in enumerate(services)
        ]
        # The GPUs follow the first profile that states them (a demo host serves one service).
        stated = [p for p in profiles.values() if p.gpu_util is not None]
        shares = None
        if stated:
            first = stated[0]
            sm = first.sm_active if first.sm_active is not None else first.gpu_util / 3
            shares = (first.gpu_util, sm, first.dram_active)
        self.gpus = FakeGpus(gpus, host=host, rng=self.rng, shares=shares)
        self.max_requests_per_batch = max_requests_per_batch
        self.planned: Slowdown | None = None  # the slowdown waiting for its start
        if slowdown_after is not None:
            begin = self.started + slowdown_after
            self.planned = Slowdown(
                factor=slowdown_factor,
                share=slowdown_share,
                start=begin,
                end=math.inf if slowdown_for is None else begin + slowdown_for,
            )

    def set_slowdown(
        self, factor: float, share: float = 0.1, *, duration: float | None = None
    ) -> None:
        """Make `share` of requests `factor` times slower from now on (1.0 restores), for
        `duration` seconds when given."""
        now = self.clock()
        end = math.inf if duration is None else now + duration
        self._apply(Slowdown(factor=factor, share=share, start=now, end=end))

    @property
    def slowdown(self) -> Slowdown:
        """The slowdown in force now (inactive when there is none)."""
        return self.engines[0].slowdown if self.engines else Slowdown()

    def _apply(self, slowdown: Slowdown) -> None:
        for engine in self.engines:
            engine.slowdown = slowdown
        if slowdown.active:
            until = "" if slowdown.end == math.inf else f" for {slowdown.end - slowdown.start:g} s"
            log.warning(
                "simulator: slowdown x%.2f on %.0f%% of requests%s",
                slowdown.factor,
                slowdown.share * 100,
                until,
            )
        else:
            log.warning("simulator: slowdown over")

    def step(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """Advance to now: (gpus, scrapes, requests)."""
        now = self.clock()
        if self.planned is not None and now >= self.planned.start:
            # Requests are judged by their finish time, so the regression starts (and ends)
            # on the second even when a batch spans its edges.
            planned, self.planned = self.planned, None
            self._apply(planned)
        for engine in self.engines:
            engine.advance(now)
        if self.slowdown.active and now >= self.slowdown.end:
            self._apply(Slowdown())
        ts = rfc3339(datetime.fromtimestamp(now, UTC))
        scrapes = [
            {"ts": ts, "service": e.service, "source": e.engine, "exposition": e.exposition()}
            for e in self.engines
        ]
        per_engine = max(1, self.max_requests_per_batch // max(1, len(self.engines)))
        requests = [r for e in self.engines for r in e.take_requests(per_engine)]
        load = sum(e.load_at(now) for e in self.engines) / max(1, len(self.engines))
        return self.gpus.read(now, load), scrapes, requests
