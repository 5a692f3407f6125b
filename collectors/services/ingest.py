"""Storing an agent's batch: one transaction, idempotent by batch id (docs/contracts.md).

GPU rows, counts and touched minutes are built before the transaction opens. Then the batch row
goes in first, under a unique constraint on `batch_id` with ON CONFLICT DO NOTHING: a replay (or
the same batch posted twice at once: the second INSERT waits for the first to commit, then
inserts nothing) is answered as a duplicate before anything else is written, without a
savepoint. The same statement looks up and locks the host and the services the raw rows name.
Raw rows go in with one COPY per table; each engine scrape becomes a window against the
previous scrape of the same host + service + source. A batch of requests and GPU samples thus
costs four round trips after BEGIN: the INSERT with the key lock, two COPYs, COMMIT. The
roll-up task picks the batch up later (`IngestBatch.rolled_up_at` is null).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from operator import attrgetter
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from collectors import exposition, storage
from collectors.decoding import validate_document
from collectors.models import (
    AgentToken,
    GpuSample,
    Host,
    IngestBatch,
    RequestSample,
    ScrapeState,
    ScrapeWindow,
)
from dossiers.models import Service

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
# A ValidRequest's values in REQUEST_FIELDS order after the two keys (one C call a sample).
_request_values = attrgetter(
    "ts", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms", "prompt_tokens", "output_tokens", "ok"
)
WINDOW_FIELDS = (
    "host_id", "service_id", "source", "start_ts", "ts", "seconds", "counters", "rates",
    "histograms", "gauges", "reset_detected",
)  # fmt: skip


@dataclass
class IngestResult:
    duplicate: bool
    batch_id: Any = None
    counts: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # stored, but likely not what was meant


def scrape_warnings(scrapes: list[dict]) -> list[str]:
    """One line per scrape that was stored yet holds nothing PerfHub reads, naming it, and the
    sources that would read it where there are any."""
    out = []
    for i, s in enumerate(scrapes):
        if not s["parsed"].maps_nothing:
            continue
        source = s["source"]
        line = f"scrapes[{i}]: none of its samples is a metric PerfHub reads for source {source!r}"
        readers = exposition.sources_reading(s["exposition"])
        if readers:
            named = " or ".join(repr(r) for r in readers)
            out.append(f"{line}; source {named} reads them (docs/integrations.md)")
        else:
            out.append(
                f"{line}: is the source right, and are the engine's metrics on (vLLM's "
                "--disable-log-stats turns them off)? (docs/integrations.md)"
            )
    return out


def epoch_minute(ts: datetime) -> int:
    return int(ts.timestamp()) // 60


def ingest_batch(
    *, host: Host, data: dict, now: datetime | None = None, token: AgentToken | None = None
) -> IngestResult:
    """Store a validated batch (`IngestBatchSerializer.validated_data`) for `host`, recording
    the agent token that pushed it (None for a pull)."""
    now = now or timezone.now()
    host_id = host.pk
    requests = data["requests"]
    gpu_rows = [_gpu_row(host_id, g) for g in data["gpus"]]
    for scrape in data["scrapes"]:
        if scrape["source"] == "dcgm":
            gpu_rows += [
                _gpu_row(host_id, {"ts": scrape["ts"], **g}) for g in scrape["parsed"].gpus
            ]
    minutes = touched_minutes([row[1] for row in gpu_rows])
    minutes |= touched_minutes([r.ts for r in requests])
    counts = {
        "gpus": len(gpu_rows),
        "requests": len(requests),
        "scrapes": len(data["scrapes"]),
        "windows": 0,
    }

    with transaction.atomic():
        batch_pk, service_ids = _insert_batch_and_lock_keys(
            host=host, data=data, counts=counts, minutes=minutes, now=now, token=token
        )
        if batch_pk is None:
            return IngestResult(duplicate=True, batch_id=data["batch_id"])
        request_rows = _request_rows(requests, service_ids, host_id)
        window_rows = _scrape_windows(host, data["scrapes"], service_ids)
        storage.bulk_insert_all(
            [
                (GpuSample, GPU_FIELDS, gpu_rows),
                (RequestSample, REQUEST_FIELDS, request_rows),
                (ScrapeWindow, WINDOW_FIELDS, window_rows),
            ],
            keys_locked=True,
        )
        if window_rows:  # known only now: windows depend on the series' stored state
            counts["windows"] = len(window_rows)
            minutes |= {epoch_minute(row[4]) for row in window_rows}
            IngestBatch.objects.filter(pk=batch_pk).update(counts=counts, minutes=sorted(minutes))
        host_touch(host=host, now=now)
    return IngestResult(
        duplicate=False,
        batch_id=data["batch_id"],
        counts=counts,
        warnings=scrape_warnings(data["scrapes"]),
    )


def _request_rows(requests: list, service_ids: dict[str, int], host_id: int) -> list[tuple]:
    """Rows in REQUEST_FIELDS order (`service_ids`: every slug the batch names -> its pk).
    A batch of one service (the usual case) is made by `map` in C, with no Python step per
    sample."""
    if len(service_ids) == 1:  # every request names a known service: this one
        keys = (next(iter(service_ids.values())), host_id)
        return list(map(keys.__add__, map(_request_values, requests)))
    return [(service_ids[r.service], host_id, *_request_values(r)) for r in requests]


def touched_minutes(stamps: list[datetime]) -> set[int]:
    """The epoch minutes `stamps` fall in. A batch usually spans seconds: when its earliest and
    latest stamps are at most a minute apart, those two minutes are every minute it touches,
    found by `min`/`max` in C rather than a `timestamp()` call per sample."""
    if not stamps:
        return set()
    first, last = epoch_minute(min(stamps)), epoch_minute(max(stamps))
    if last - first <= 1:
        return {first, last}
    return {int(ts.timestamp()) // 60 for ts in stamps}


def _insert_batch_and_lock_keys(
    *,
    host: Host,
    data: dict,
    counts: dict[str, int],
    minutes: set[int],
    now: datetime,
    token: AgentToken | None,
) -> tuple[int | None, dict[str, int]]:
    """(the new batch row's pk, or None when `batch_id` is already stored: a replay; slug ->
    pk of every service the batch names), in one statement, the first of every batch.

    The services are locked FOR KEY SHARE with the host until the batch commits (a concurrent
    delete waits, then deletes its rows too). Raises ValidationError naming each item whose
    service does not exist (`requests[3].service`), OrphanRows when the host itself was
    deleted meanwhile; a replay is answered before either is looked at.
    """
    slugs = {s["service"] for s in data["scrapes"] if s.get("service")}
    slugs |= {r.service for r in data["requests"]}
    returned, found = storage.insert_then_lock_rows(
        _batch_insert(host=host, data=data, counts=counts, minutes=minutes, now=now, token=token),
        {Host: ("pk", [host.pk]), Service: ("slug", slugs)},
    )
    if not returned:
        return None, {}
    if host.pk not in found[Host]:
        raise storage.OrphanRows("RequestSample.host", [host.pk])
    service_ids = found[Service]
    if slugs <= service_ids.keys():
        return returned[0], service_ids
    errors: dict[str, list[str]] = {}
    for name in ("scrapes", "requests"):
        for i, item in enumerate(data[name]):
            slug = item.get("service") if name == "scrapes" else item.service
            if slug and slug not in service_ids:
                errors[f"{name}[{i}].service"] = [f"Unknown service {slug!r}."]
    raise ValidationError(errors)


def ingest_windows(
    *,
    host: Host,
    batch_id: Any,
    sent_at: datetime,
    agent_version: str,
    windows: list[tuple],
    now: datetime,
) -> IngestResult:
    """Store windows already differenced elsewhere (an aggregated Prometheus source: the store's
    recording rules took each interval's increase), rows in `WINDOW_FIELDS` order, as one batch:
    the same idempotency by `batch_id`, COPY and roll-up queue as a push."""  # fmt: skip
    minutes = {epoch_minute(row[4]) for row in windows}
    counts = {"gpus": 0, "requests": 0, "scrapes": 0, "windows": len(windows)}
    data = {"batch_id": batch_id, "sent_at": sent_at, "agent_version": agent_version}
    with transaction.atomic():
        batch_pk = _insert_batch(
            _batch_insert(host=host, data=data, counts=counts, minutes=minutes, now=now)
        )
        if batch_pk is None:
            return IngestResult(duplicate=True, batch_id=batch_id)
        storage.bulk_insert(ScrapeWindow, WINDOW_FIELDS, windows)
        host_touch(host=host, now=now)
    return IngestResult(duplicate=False, batch_id=batch_id, counts=counts)


def _insert_batch(statement: tuple[str, list]) -> int | None:
    """The new batch row's pk from `_batch_insert`'s statement, or None when `batch_id` is
    already stored (a replay)."""
    with connection.cursor() as cursor:
        cursor.execute(*statement)
        row = cursor.fetchone()
    return row[0] if row else None


def _batch_insert(
    *,
    host: Host,
    data: dict,
    counts: dict[str, int],
    minutes: set[int],
    now: datetime,
    token: AgentToken | None = None,
) -> tuple[str, list]:
    """(INSERT of the batch row ... ON CONFLICT DO NOTHING RETURNING its pk, parameters)."""
    values = {
        "batch_id": data["batch_id"], "host": host.pk, "received_at": now,
        "sent_at": data["sent_at"], "agent_version": data["agent_version"], "counts": counts,
        "minutes": sorted(minutes), "token": token.pk if token is not None else None,
    }  # fmt: skip
    sql, fields = _batch_insert_statement(tuple(values))
    given = [*values.values(), *(f.get_default() for f in fields[len(values) :])]
    return sql, [f.get_db_prep_save(v, connection) for f, v in zip(fields, given, strict=True)]


@functools.cache
def _batch_insert_statement(names: tuple[str, ...]) -> tuple[str, list]:
    """(INSERT ... ON CONFLICT DO NOTHING RETURNING pk, its fields: those of `names`, then every
    other column with a default), built once a process: the batch insert runs on every push.

    Raw SQL skips the ORM's defaults: every other column gets what the ORM would give it
    ("" for a blank text field, a declared default), so a new field never breaks this insert.
    """
    meta = IngestBatch._meta
    fields = [meta.get_field(name) for name in names]
    fields += [
        column
        for column in meta.concrete_fields
        if not (column.primary_key or column.name in names or column.attname in names)
        and column.get_default() is not None
    ]
    quote = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({}) ON CONFLICT ({}) DO NOTHING RETURNING {}".format(
        quote(meta.db_table),
        ", ".join(quote(f.column) for f in fields),
        ", ".join(["%s"] * len(fields)),
        quote(meta.get_field("batch_id").column),
        quote(meta.pk.column),
    )
    return sql, fields


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


def _scrape_windows(host: Host, scrapes: list[dict], service_ids: dict) -> list[tuple]:
    """Window rows for the engine scrapes, advancing each series' stored state.

    The first scrape of a series only seeds the state. A scrape not newer than the state
    (a late replay) is skipped: its window was already covered by later scrapes.
    """
    rows = []
    for scrape in sorted(scrapes, key=lambda s: s["ts"]):
        if scrape["source"] == "dcgm":
            continue
        service_id = service_ids[scrape["service"]]
        state = _locked_state(host, service_id, scrape)
        if state is None:
            continue  # seeded
        if scrape["ts"] <= state.ts:
            continue
        seconds = (scrape["ts"] - state.ts).total_seconds()
        previous = exposition.parse(state.exposition, scrape["source"])
        w = exposition.window(previous, scrape["parsed"], seconds)
        rows.append(
            (
                host.pk, service_id, scrape["source"], state.ts, scrape["ts"], seconds,
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
    now = now or timezone.now()
    data = validate_document(document, {"host": host, "now": now})
    return ingest_batch(host=host, data=data, now=now)
