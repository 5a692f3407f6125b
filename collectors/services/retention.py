"""Retention (DESIGN.md sections 4 and 7): raw rows for PERFHUB_RAW_RETENTION_DAYS, per-host
minute roll-ups for PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS, hourly roll-ups kept."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from collectors.models import (
    MINUTE,
    GpuRollup,
    GpuSample,
    IngestBatch,
    RequestSample,
    ScrapeWindow,
    ServiceRollup,
)


def prune(*, now: datetime | None = None) -> dict[str, int]:
    """Delete rows past their retention. Returns rows deleted per table."""
    now = now or timezone.now()
    raw_cutoff = now - timedelta(days=settings.PERFHUB_RAW_RETENTION_DAYS)
    minute_cutoff = now - timedelta(days=settings.PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS)
    deleted: dict[str, int] = {}
    with transaction.atomic():
        for model in (GpuSample, RequestSample, ScrapeWindow):
            deleted[model.__name__] = model.objects.filter(ts__lt=raw_cutoff).delete()[0]
        # Batch ids are the replay guard; kept as long as the raw rows they produced.
        deleted["IngestBatch"] = IngestBatch.objects.filter(
            received_at__lt=raw_cutoff, rolled_up_at__isnull=False
        ).delete()[0]
        for model in (ServiceRollup, GpuRollup):
            deleted[model.__name__] = model.objects.filter(
                resolution_s=MINUTE, start__lt=minute_cutoff
            ).delete()[0]
    return deleted
