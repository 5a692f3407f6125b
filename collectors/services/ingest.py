"""Storing an agent's batch: one transaction, idempotent by batch id (DESIGN.md section 3).

The batch row is inserted first, under a unique constraint on `batch_id`: a replay (or the
same batch posted twice at once: the second INSERT waits for the first to commit, then fails)
is answered as a duplicate before anything else is written. Raw rows go in with COPY; each
engine scrape becomes a window against the previous scrape of the same host + service +
source. The roll-up task picks the batch up later (`IngestBatch.rolled_up_at` is null).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from collectors import exposition, storage
from collectors.models import (
    AgentToken,
    GpuSample,
    Host,
    IngestBatch,
    RequestSample,
    ScrapeState,
    ScrapeWindow,
)
from collectors.serializers import IngestBatchSerializer, flatten_errors

LAST_SEEN_PRECISION = timedelta(minutes=1)

GPU_FIELDS = (
    "host_id", "ts", "gpu_index", "uuid", "name", "util", "mem_util", "mem_used_bytes",
    "mem_total_bytes", "power_w", "temp_c", "sm_clock_mhz", "sm_active", "sm_occupancy",
    "dram_active",
)  # fmt: skip
REQUEST_FIELDS = (
    "service_id", "host_id", "ts", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms",
    "prompt_tokens", "output_tokens", "ok",
)  # fmt: skip
WINDOW_FIELDS = (
    "host_id", "service_id", "source", "start_ts", "ts", "seconds", "counters", "rates",
    "histograms", "gauges", "reset_detected",
)  # fmt: skip


@dataclass
class IngestResult:
    duplicate: bool
    batch_id: Any = None
    counts: dict[str, int] = field(default_factory=dict)


def epoch_minute(ts: datetime) -> int:
    return int(ts.timestamp()) // 60


def ingest_batch(
    *, host: Host, data: dict, now: datetime | None = None, token: AgentToken | None = None
) -> IngestResult:
    """Store a validated batch (`IngestBatchSerializer.validated_data`) for `host`, recording
    the agent token that pushed it (None for a pull)."""
    now = now or timezone.now()
    services = data["services"]
    gpu_rows = [_gpu_row(host.pk, g) for g in data["gpus"]]
    request_rows = [
        (
            services[r["service"]].pk, host.pk, r["ts"], r.get("ttft_ms"), r.get("tpot_ms"),
            r["e2e_ms"], r.get("queue_ms"), r.get("prompt_tokens"), r.get("output_tokens"),
            r["ok"],
        )
        for r in data["requests"]
    ]  # fmt: skip
    for scrape in data["scrapes"]:
        if scrape["source"] == "dcgm":
            gpu_rows += [
                _gpu_row(host.pk, {"ts": scrape["ts"], **g}) for g in scrape["parsed"].gpus
            ]

    with transaction.atomic():
        try:
            with transaction.atomic():
                batch = IngestBatch.objects.create(
                    batch_id=data["batch_id"],
                    host=host,
                    sent_at=data["sent_at"],
                    agent_version=data["agent_version"],
                    token=token,
                )
        except IntegrityError:
            return IngestResult(duplicate=True, batch_id=data["batch_id"])

        window_rows = _scrape_windows(host, data["scrapes"], services)
        storage.bulk_insert(GpuSample, GPU_FIELDS, gpu_rows)
        storage.bulk_insert(RequestSample, REQUEST_FIELDS, request_rows)
        storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, window_rows)

        minutes = {epoch_minute(row[1]) for row in gpu_rows}
        minutes |= {epoch_minute(row[2]) for row in request_rows}
        minutes |= {epoch_minute(row[4]) for row in window_rows}
        counts = {
            "gpus": len(gpu_rows),
            "requests": len(request_rows),
            "scrapes": len(data["scrapes"]),
            "windows": len(window_rows),
        }
        IngestBatch.objects.filter(pk=batch.pk).update(counts=counts, minutes=sorted(minutes))
        host_touch(host=host, now=now)
    return IngestResult(duplicate=False, batch_id=batch.batch_id, counts=counts)


def host_touch(*, host: Host, now: datetime) -> None:
    """Record that the host was heard from; at most one write a minute (conditional update)."""
    if host.last_seen_at and now - host.last_seen_at < LAST_SEEN_PRECISION:
        return
    Host.objects.filter(pk=host.pk).filter(
        Q(last_seen_at__isnull=True) | Q(last_seen_at__lt=now - LAST_SEEN_PRECISION)
    ).update(last_seen_at=now)
    host.last_seen_at = now


def _gpu_row(host_id: int, g: dict) -> tuple:
    return (
        host_id, g["ts"], g["index"], g.get("uuid") or "", g.get("name") or "", g.get("util"),
        g.get("mem_util"), g.get("mem_used_bytes"), g.get("mem_total_bytes"), g.get("power_w"),
        g.get("temp_c"), g.get("sm_clock_mhz"), g.get("sm_active"), g.get("sm_occupancy"),
        g.get("dram_active"),
    )  # fmt: skip


def _scrape_windows(host: Host, scrapes: list[dict], services: dict) -> list[tuple]:
    """Window rows for the engine scrapes, advancing each series' stored state.

    The first scrape of a series only seeds the state. A scrape not newer than the state
    (a late replay) is skipped: its window was already covered by later scrapes.
    """
    rows = []
    for scrape in sorted(scrapes, key=lambda s: s["ts"]):
        if scrape["source"] == "dcgm":
            continue
        service = services[scrape["service"]]
        state = _locked_state(host, service.pk, scrape)
        if state is None:
            continue  # seeded
        if scrape["ts"] <= state.ts:
            continue
        seconds = (scrape["ts"] - state.ts).total_seconds()
        previous = exposition.parse(state.exposition, scrape["source"])
        w = exposition.window(previous, scrape["parsed"], seconds)
        rows.append(
            (
                host.pk, service.pk, scrape["source"], state.ts, scrape["ts"], seconds,
                dict(w.counters), dict(w.rates),
                {name: bc.to_dict() for name, bc in w.histograms.items()},
                dict(w.gauges), bool(w.reset_detected),
            )
        )  # fmt: skip
        ScrapeState.objects.filter(pk=state.pk).update(
            ts=scrape["ts"], exposition=scrape["exposition"]
        )
    return rows


def _locked_state(host: Host, service_id: int, scrape: dict) -> ScrapeState | None:
    """The series' state row, locked; None when this scrape created it (nothing to diff)."""
    key = {"host": host, "service_id": service_id, "source": scrape["source"]}
    state = ScrapeState.objects.select_for_update().filter(**key).first()
    if state is not None:
        return state
    try:
        with transaction.atomic():
            ScrapeState.objects.create(**key, ts=scrape["ts"], exposition=scrape["exposition"])
        return None
    except IntegrityError:  # another batch of this host seeded it just now
        return ScrapeState.objects.select_for_update().get(**key)


def ingest_document(*, host: Host, document: Any, now: datetime | None = None) -> IngestResult:
    """Validate and store a batch document from anywhere other than the API (pull mode).

    Raises `rest_framework.exceptions.ValidationError` (flattened field paths) or
    `PermissionDenied` (a document naming another host), as the API would answer.
    """
    serializer = IngestBatchSerializer(data=document, context={"host": host, "now": now})
    if not serializer.is_valid():
        raise ValidationError(flatten_errors(serializer.errors))
    return ingest_batch(host=host, data=serializer.validated_data, now=now)
