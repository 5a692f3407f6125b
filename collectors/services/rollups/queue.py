"""The roll-up work queue: claim batches nobody has rolled up, roll them up host by host, and
quarantine a batch that cannot be processed (with its reason) so it never stalls the others.

The claim takes SKIP LOCKED candidates and stamps them with a conditional UPDATE on the partial
`ingestbatch_todo` index, so two workers never take the same batch.
"""

from __future__ import annotations

import logging
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from collectors.models import IngestBatch
from collectors.services.rollups.host import rollup_host_minutes


def claim_timeout() -> timedelta:
    """How long a claim is honoured: after that its batches are claimable again (the worker
    that took them died mid-roll-up; a slow one re-rolling them is harmless, roll-ups are
    recomputed under the host's lock)."""
    return timedelta(seconds=settings.PERFHUB_ROLLUP_CLAIM_TIMEOUT_S)


MAX_REASON_CHARS = 500

log = logging.getLogger(__name__)


@dataclass
class RollupReport:
    """What one `rollup_pending` run did: batches rolled up and batches set aside."""

    rolled_up: int = 0
    quarantined: list[tuple[int, str]] = field(default_factory=list)  # (batch pk, reason)
    hosts: int = 0


def _claim_batches(now: datetime, limit: int) -> uuid.UUID | None:
    """Stamp up to `limit` unclaimed batches with a new claim; None when there is nothing.

    On PostgreSQL the candidates are locked with SKIP LOCKED, so a second worker claiming at
    the same moment takes the next batches instead of queueing behind the first. Either way
    the conditional UPDATE is the claim: a batch another worker took meanwhile is skipped.
    """
    claim = uuid.uuid4()
    claimable = Q(rolled_up_at__isnull=True, quarantined_at__isnull=True) & (
        Q(claimed_at__isnull=True) | Q(claimed_at__lt=now - claim_timeout())
    )
    with transaction.atomic():
        candidates = IngestBatch.objects.filter(claimable).order_by("id")
        if connection.features.has_select_for_update_skip_locked:
            candidates = candidates.select_for_update(skip_locked=True)
        ids = list(candidates.values_list("id", flat=True)[:limit])
        if not ids:
            return None
        taken = IngestBatch.objects.filter(claimable, id__in=ids).update(
            claim=claim, claimed_at=now
        )
    return claim if taken else None


def _reason(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:MAX_REASON_CHARS]


def rollup_claimed(claim: uuid.UUID, *, now: datetime) -> RollupReport:
    """Roll up the batches of one claim, host by host; a batch that fails is quarantined.

    Each host's minutes are recomputed in one transaction. If that fails, the host's batches
    are retried one at a time, so only the batch that cannot be processed is set aside (with
    its reason); its neighbours, and every other host, roll up as usual.
    """
    report = RollupReport()
    by_host: dict[int, list[tuple[int, list[int]]]] = defaultdict(list)
    for pk, host_id, minutes in IngestBatch.objects.filter(claim=claim).values_list(
        "pk", "host_id", "minutes"
    ):
        by_host[host_id].append((pk, list(minutes or [])))
    for host_id, batches in by_host.items():
        report.hosts += 1
        try:
            rollup_host_minutes(host_id=host_id, minutes={m for _, ms in batches for m in ms})
        except Exception:
            log.warning("roll-up of host %s failed; retrying its batches one by one", host_id)
        else:
            done = [pk for pk, _ in batches]
            IngestBatch.objects.filter(pk__in=done).update(rolled_up_at=now)
            report.rolled_up += len(done)
            continue
        for pk, minutes in batches:
            try:
                rollup_host_minutes(host_id=host_id, minutes=minutes)
            except Exception as exc:
                reason = _reason(exc)
                log.warning("batch %s of host %s quarantined: %s", pk, host_id, reason)
                IngestBatch.objects.filter(pk=pk).update(
                    quarantined_at=now, quarantine_reason=reason
                )
                report.quarantined.append((pk, reason))
            else:
                IngestBatch.objects.filter(pk=pk).update(rolled_up_at=now)
                report.rolled_up += 1
    return report


def rollup_pending(*, now: datetime | None = None, limit: int = 1000) -> int:
    """Claim batches not yet rolled up, recompute what they touched. Returns batches done."""
    return rollup_pending_report(now=now, limit=limit).rolled_up


def rollup_pending_report(*, now: datetime | None = None, limit: int = 1000) -> RollupReport:
    """`rollup_pending`, telling also which batches were quarantined and why."""
    now = now or timezone.now()
    claim = _claim_batches(now, limit)
    if claim is None:
        return RollupReport()
    return rollup_claimed(claim, now=now)


def requeue_quarantined(*, host_id: int | None = None) -> int:
    """Give quarantined batches another go (after a fix); returns how many."""
    qs = IngestBatch.objects.filter(quarantined_at__isnull=False, rolled_up_at__isnull=True)
    if host_id is not None:
        qs = qs.filter(host_id=host_id)
    return qs.update(quarantined_at=None, quarantine_reason="", claim=None, claimed_at=None)
