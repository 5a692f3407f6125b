"""Direct writes for tests that need volume: raw rows through the real storage path."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import numpy as np

from collectors import storage
from collectors.models import Host, RequestSample
from collectors.services.ingest import REQUEST_FIELDS, epoch_minute
from collectors.services.rollups import rollup_host_minutes


def store_requests(*, service, host, start: datetime, e2e_ms: list[float], spacing_s: float):
    rows = [
        (service.pk, host.pk, start + timedelta(seconds=i * spacing_s), None, None, value, None,
         10, 20, True)
        for i, value in enumerate(e2e_ms)
    ]  # fmt: skip
    storage.bulk_insert(RequestSample, REQUEST_FIELDS, rows)
    return rows


START = datetime(2025, 3, 3, 10, 0, tzinfo=UTC)


def fill(service, *, hosts=4, minutes=60, per_minute=50, seed=7):
    """Requests over `hosts` x `minutes`; host 0 is slow and busy (the fleet P99 lives there)."""
    rng = np.random.default_rng(seed)
    everything = []
    for h in range(hosts):
        host = Host.objects.create(name=f"gpu-{h}")
        n = per_minute * minutes * (3 if h == 0 else 1)
        values = rng.lognormal(mean=7.0 + (0.8 if h == 0 else 0.0), sigma=0.5, size=n)
        store_requests(
            service=service, host=host, start=START, e2e_ms=list(values), spacing_s=minutes * 60 / n
        )
        rollup_host_minutes(
            host_id=host.pk, minutes=range(epoch_minute(START), epoch_minute(START) + minutes)
        )
        everything.append(values)
    return np.concatenate(everything)
