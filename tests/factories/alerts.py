"""Collectors data for alert tests, written minute by minute, and evaluation at a frozen time.

`feed` writes raw request / GPU / scrape-window rows through collectors' storage path and rolls
them up with collectors' own `rollup_host_minutes`, so evaluation reads exactly what it would
read in production. `Timeline.tick(i)` evaluates at the moment minute `i` has closed and the
evaluation lag has passed, with time frozen there by time_machine.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import time_machine

from alerts import services
from collectors import storage
from collectors.models import GpuSample, Host, RequestSample, ScrapeWindow
from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS, WINDOW_FIELDS, epoch_minute
from collectors.services.rollups import rollup_host_minutes

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
LAG = timedelta(seconds=120)
REQUESTS_PER_MINUTE = 120


def minute(i: int) -> datetime:
    return T0 + timedelta(minutes=i)


def feed(
    service,
    host: Host,
    i: int,
    *,
    e2e_ms: float | None = None,
    requests: int = REQUESTS_PER_MINUTE,
    gpu: dict | None = None,
    gauges: dict | None = None,
) -> None:
    """One minute of data for `service` on `host`: requests, GPU samples, a scrape window."""
    start = minute(i)
    if e2e_ms is not None:
        spacing = 59.0 / max(requests, 1)
        rows = [
            (service.pk, host.pk, start + timedelta(seconds=k * spacing), e2e_ms / 10,
             e2e_ms / 100, e2e_ms, 1.0, 500, 200, True)
            for k in range(requests)
        ]  # fmt: skip
        storage.bulk_insert(RequestSample, REQUEST_FIELDS, rows)
    if gpu is not None:
        g = {"util": None, "sm_active": None, **gpu}
        rows = [
            (host.pk, start + timedelta(seconds=s), 0, "GPU-0", "NVIDIA H100", g["util"], 0.5,
             1, 2, 500.0, 60.0, 1980.0, g["sm_active"], None, None)
            for s in (5, 35)
        ]  # fmt: skip
        storage.bulk_insert(GpuSample, GPU_FIELDS, rows)
    if gauges is not None:
        rows = [
            (host.pk, service.pk, "vllm", start + timedelta(seconds=s - 15),
             start + timedelta(seconds=s), 15.0, {}, {}, {}, gauges, False)
            for s in (15, 30, 45)
        ]  # fmt: skip
        storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, rows)
    rollup_host_minutes(host_id=host.pk, minutes=[epoch_minute(start)])


def evaluation_time(i: int) -> datetime:
    """When minute `i` is the last closed minute of an evaluation (lag included)."""
    return minute(i + 1) + LAG


class Timeline:
    def __init__(self, service, host, capture):
        self.service = service
        self.host = host
        self.capture = capture

    def tick(self, i: int, **data):
        """Feed minute i (when data is given), then evaluate at its closing time."""
        if data:
            feed(self.service, self.host, i, **data)
        when = evaluation_time(i) + timedelta(seconds=7)  # mid-minute: alignment is tested
        with time_machine.travel(when, tick=False), self.capture(execute=True):
            return services.evaluate_all(when)

    def run(self, values: list[float | None], start: int = 0, **extra):
        reports = []
        for offset, value in enumerate(values):
            reports.append(self.tick(start + offset, e2e_ms=value, **extra))
        return reports
