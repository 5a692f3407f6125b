"""Retention (docs/operations.md, "Retention"): raw rows for PERFHUB_RAW_RETENTION_DAYS, per-host
minute roll-ups for PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS, hourly roll-ups kept.

Raw tables: on PostgreSQL they are partitioned by day, and retention detaches and drops the
days wholly past the cutoff (see `collectors.partitions`); elsewhere (SQLite) a DELETE.
Each table is pruned in its own transaction, so one that fails (a lock timeout, a bad row) is
reported and retried next run while the others are still pruned.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from collectors import partitions
from collectors.models import (
    MINUTE,
    GpuRollup,
    GpuSample,
    IngestBatch,
    RequestSample,
    ScrapeWindow,
    ServiceRollup,
)

log = logging.getLogger(__name__)


def _steps(now: datetime) -> list[tuple[str, Callable[[], int]]]:
    raw_cutoff = now - timedelta(days=settings.PERFHUB_RAW_RETENTION_DAYS)
    minute_cutoff = now - timedelta(days=settings.PERFHUB_MINUTE_ROLLUP_RETENTION_DAYS)
    steps: list[tuple[str, Callable[[], int]]] = []
    for model in (GpuSample, RequestSample, ScrapeWindow):
        table = model._meta.db_table
        if partitions.enabled() and partitions.is_partitioned(table):
            steps.append(
                (
                    f"{model.__name__} partitions",
                    lambda t=table: partitions.drop_before(t, raw_cutoff),
                )
            )
            steps.append(
                (model.__name__, lambda t=table: partitions.prune_leftovers(t, raw_cutoff))
            )
        else:
            steps.append(
                (model.__name__, lambda m=model: m.objects.filter(ts__lt=raw_cutoff).delete()[0])
            )
    # Batch ids are the replay guard; kept as long as the raw rows they produced. Quarantined
    # batches go with them: their raw rows are gone, so there is nothing left to retry.
    steps.append(
        (
            "IngestBatch",
            lambda: (
                IngestBatch.objects.filter(received_at__lt=raw_cutoff)
                .exclude(rolled_up_at__isnull=True, quarantined_at__isnull=True)
                .delete()[0]
            ),
        )
    )
    steps += [
        (
            m.__name__,
            lambda m=m: m.objects.filter(resolution_s=MINUTE, start__lt=minute_cutoff).delete()[0],
        )
        for m in (ServiceRollup, GpuRollup)
    ]
    return steps


def prune(*, now: datetime | None = None) -> dict[str, int]:
    """Delete rows past their retention. Returns rows deleted per table (-1: it failed)."""
    now = now or timezone.now()
    deleted: dict[str, int] = {}
    for name, step in _steps(now):
        try:
            with transaction.atomic():
                deleted[name] = step()
        except Exception:
            log.exception("pruning %s failed; the other tables go on", name)
            deleted[name] = -1
    return deleted
