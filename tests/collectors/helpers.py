"""Direct writes for tests that need volume: raw rows through the real storage path."""

from __future__ import annotations

from datetime import datetime, timedelta

from collectors import storage
from collectors.models import RequestSample
from collectors.services.ingest import REQUEST_FIELDS


def store_requests(*, service, host, start: datetime, e2e_ms: list[float], spacing_s: float):
    rows = [
        (service.pk, host.pk, start + timedelta(seconds=i * spacing_s), None, None, value, None,
         10, 20, True)
        for i, value in enumerate(e2e_ms)
    ]  # fmt: skip
    storage.bulk_insert(RequestSample, REQUEST_FIELDS, rows)
    return rows
