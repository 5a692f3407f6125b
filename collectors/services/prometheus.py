"""Prometheus as a data source (docs/integrations.md, "Prometheus").

Each sync reads, step by step, the raw series the mapping tables name from the source's
Prometheus (`/api/v1/query_range`), rebuilds the text each step's scrape would have served
(`collectors.exposition.promql`) and ingests it as a batch of scrapes of the source's host:
the same windows (per-series deltas, restarts, no extrapolation), roll-ups and merged bucket
counts as an agent's push or a pull. Values are read at the steps, never `rate()`d, so no
extrapolation creeps in and a restart between steps is seen as a counter going down.

The cursor is the last step ingested. Until the engine selector has matched once, the cursor
does not move, so the first good connection still backfills `backfill_hours`. A batch's id is
derived from the source and its step range: a sync retried after a crash re-sends the same
batch, which ingest answers as a duplicate.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import requests
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone
from rest_framework.exceptions import APIException

from collectors import exposition
from collectors.exposition import promql, recording
from collectors.instruments import PULL_ERRORS, record_ingest
from collectors.models import Host, PrometheusSource, ScrapeState
from collectors.services.ingest import ingest_document, ingest_windows
from core.outbound import OutboundRefused, answered, failure_reason, outbound_request

MAX_ERROR_CHARS = 2000
STEPS_PER_QUERY = 120  # one query_range call (and one ingest batch) covers at most this many steps
# A counter series missing from a step (its target missed scrapes) keeps its last value this
# long, so it is not counted from zero when it returns; each query reads this far back for it.
CARRY_S = 15 * 60
_BATCH_NAMESPACE = uuid.UUID("6f1c3a52-9d55-4d1e-9a57-4c0f5e2b7a10")


class PrometheusError(Exception):
    """A query failed; the message is what the source's page shows."""


@dataclass
class SyncOutcome:
    source_id: int
    ok: bool
    error: str = ""
    steps: int = 0  # scrapes ingested (engine and DCGM)
    series: dict[str, int] = field(default_factory=dict)


def source_create(
    *,
    name: str,
    service,
    base_url: str,
    engine_selector: str,
    mode: str = PrometheusSource.Mode.PER_HOST,
    engine: str = "vllm",
    dcgm_selector: str = "",
    step_s: int = 15,
    interval_s: int = 60,
    backfill_hours: int = 6,
) -> PrometheusSource:
    """A source and the host its samples are stored under. Raises ValidationError on bad input."""
    host_name = f"prometheus:{name}"
    if Host.objects.filter(name=host_name).exists():
        raise ValidationError({"name": f"A host named {host_name!r} exists already."})
    with transaction.atomic():
        host = Host.objects.create(name=host_name)
        source = PrometheusSource(
            name=name,
            service=service,
            host=host,
            mode=mode,
            base_url=base_url,
            engine=engine,
            engine_selector=engine_selector,
            dcgm_selector=dcgm_selector,
            step_s=step_s,
            interval_s=interval_s,
            backfill_hours=backfill_hours,
        )
        source.full_clean()
        source.save()
    return source


def source_update(*, source: PrometheusSource, changed: Iterable[str]) -> None:
    """After an edit: new selectors or engine read other series, so the stored state of the
    old ones must not be diffed against them (that would count every new series from zero):
    the next sync seeds afresh from its first step."""
    if {"mode", "engine", "engine_selector", "dcgm_selector"} & set(changed):
        ScrapeState.objects.filter(host_id=source.host_id).delete()


def due_sources(*, now: datetime | None = None) -> list[int]:
    """Claim the enabled sources whose interval has elapsed (a conditional update, so two
    beat ticks never sync one source twice at once); returns their ids."""
    now = now or timezone.now()
    claimed = []
    rows = PrometheusSource.objects.filter(enabled=True).values_list(
        "id", "last_attempt_at", "interval_s"
    )
    for source_id, last, interval in rows:
        if last is not None and now - last < timedelta(seconds=interval):
            continue
        unchanged = Q(last_attempt_at__isnull=True) if last is None else Q(last_attempt_at=last)
        if PrometheusSource.objects.filter(unchanged, pk=source_id).update(last_attempt_at=now):
            claimed.append(source_id)
    return claimed


def sync_range(source: PrometheusSource, now: datetime) -> tuple[int, int] | None:
    """The steps (unix seconds, inclusive) this sync should read, or None when up to date.

    The end trails now by PERFHUB_PROMETHEUS_LAG_S, so Prometheus has the step's scrape. The
    start is never further back than `backfill_hours`: a source disabled for longer resumes
    with a gap (ingest refuses samples over a week old anyway).
    """
    step = source.step_s
    lag = getattr(settings, "PERFHUB_PROMETHEUS_LAG_S", 30)
    end = int(now.timestamp() - lag) // step * step
    # ceil on the exact float: truncating first would reach a fraction of a second past backfill
    oldest = math.ceil((now.timestamp() - source.backfill_hours * 3600) / step) * step
    start = oldest
    if source.cursor is not None:
        start = max(oldest, int(source.cursor.timestamp()) + step)
    return (start, end) if start <= end else None


def source_sync(*, source_id: int, now: datetime | None = None) -> SyncOutcome:
    """Read the source's new steps from Prometheus and ingest them; record ok or the error."""
    now = now or timezone.now()
    source = PrometheusSource.objects.select_related("service", "host").get(pk=source_id)
    outcome = SyncOutcome(source_id=source.pk, ok=True)
    span = sync_range(source, now)
    try:
        if span is not None and source.mode == PrometheusSource.Mode.AGGREGATED:
            _sync_aggregated(source, span, now, outcome)
        elif span is not None:
            _sync(source, span, now, outcome)
    except PrometheusError as exc:
        outcome.ok, outcome.error = False, str(exc)
    except APIException as exc:  # what ingest refused, as it would answer a push
        outcome.ok, outcome.error = False, f"ingest refused the data: {exc.detail}"
    _record(source, now, outcome)
    return outcome


def _sync(source: PrometheusSource, span: tuple[int, int], now: datetime, outcome) -> None:
    start, end = span
    step = source.step_s
    carry = frozenset(exposition.metric_names(source.engine, cumulative_only=True))
    lead = -(-CARRY_S // step) * step
    queries = {source.engine: promql.series_query(source.engine, source.engine_selector)}
    if source.dcgm_selector:
        queries["dcgm"] = promql.series_query("dcgm", source.dcgm_selector)
    seen = dict.fromkeys(queries, 0)
    chunk_start = start
    while chunk_start <= end:
        chunk_end = min(chunk_start + step * (STEPS_PER_QUERY - 1), end)
        scrapes = []
        for kind, query in queries.items():
            ahead = lead if kind != "dcgm" else 0  # DCGM's fields are gauges: nothing to carry
            matrix = query_range(source.base_url, query, chunk_start - ahead, chunk_end, step)
            seen[kind] = max(seen[kind], len(matrix))
            texts = promql.expositions(matrix, carry=carry, carry_s=CARRY_S)
            for ts, text in texts.items():
                if ts < chunk_start:
                    continue  # read only to carry values forward
                scrapes.append(
                    {
                        "ts": _rfc3339(datetime.fromtimestamp(ts, tz=UTC)),
                        "service": source.service.slug if kind != "dcgm" else "",
                        "source": kind,
                        "exposition": text,
                    }
                )
        if not seen[source.engine] and source.cursor is None:
            # Nothing matched yet: leave the cursor, so the first good answer still backfills.
            chunk_start = chunk_end + step
            continue
        if scrapes:
            try:
                result = ingest_document(
                    host=source.host, document=_document(source, scrapes, now), now=now
                )
            except APIException:
                record_ingest(via="prometheus", outcome="rejected")
                raise
            outcome_name = "duplicate" if result.duplicate else "accepted"
            record_ingest(via="prometheus", outcome=outcome_name, counts=result.counts)
        outcome.steps += len(scrapes)
        source.cursor = datetime.fromtimestamp(chunk_end, tz=UTC)
        PrometheusSource.objects.filter(pk=source.pk).update(cursor=source.cursor)
        chunk_start = chunk_end + step
    outcome.series = seen
    missing = [kind for kind, count in seen.items() if not count]
    if missing:
        shown = "; ".join(f"{kind}: {_selector_shown(source, kind)}" for kind in missing)
        raise PrometheusError(
            f"no series match ({shown}) between {_rfc3339(datetime.fromtimestamp(start, UTC))} "
            f"and {_rfc3339(datetime.fromtimestamp(end, UTC))}"
        )


def _sync_aggregated(
    source: PrometheusSource, span: tuple[int, int], now: datetime, outcome
) -> None:
    """Read the recording rules' per-service sums: one query per chunk whatever the host
    count. Each recorded sample is the fleet's increase over the rule interval ending at its
    timestamp, so it becomes one window as it is (parsed by the engine's mapping, windowed
    against an empty scrape) and goes to the window table like a scrape's window; the roll-ups
    and everything above them are the per-host mode's. Raw samples are read (a range selector
    at one instant, not `query_range`'s steps), so an evaluation is never counted twice or
    skipped when its phase differs from the step grid."""
    start, end = span
    step = source.step_s
    query = recording.recorded_query(source.engine, source.engine_selector)
    empty = exposition.ParsedScrape(source=source.engine)
    after = source.cursor.timestamp() if source.cursor is not None else start - 1
    seen = 0
    while after < end:
        chunk_end = min(int(after) + step * STEPS_PER_QUERY, end)
        matrix = query_samples(source.base_url, query, int(after), chunk_end)
        seen = max(seen, len(matrix))
        windows = []
        last = after
        for ts, text in recording.delta_expositions(matrix).items():
            if ts <= after:
                continue  # ingested by an earlier sync (the range's start is inclusive)
            try:
                parsed = exposition.parse(text, source.engine)
            except exposition.ExpositionError as exc:
                raise PrometheusError(f"recorded series unreadable: {exc}") from None
            w = exposition.window(empty, parsed, float(step))
            at = datetime.fromtimestamp(ts, tz=UTC)
            windows.append(
                (
                    source.host_id, source.service_id, source.engine, at - timedelta(seconds=step),
                    at, float(step), dict(w.counters), dict(w.rates),
                    {name: bc.to_dict() for name, bc in w.histograms.items()}, dict(w.gauges),
                    bool(w.reset_detected),
                )
            )  # fmt: skip
            last = ts
        if windows:
            key = f"{source.pk}:aggregated:{source.engine_selector}:{windows[0][4]}:{last}"
            result = ingest_windows(
                host=source.host, batch_id=uuid.uuid5(_BATCH_NAMESPACE, key), sent_at=now,
                agent_version="prometheus-aggregated", windows=windows, now=now,
            )  # fmt: skip
            outcome_name = "duplicate" if result.duplicate else "accepted"
            record_ingest(via="prometheus", outcome=outcome_name, counts=result.counts)
            outcome.steps += len(windows)
            source.cursor = datetime.fromtimestamp(last, tz=UTC)
            PrometheusSource.objects.filter(pk=source.pk).update(cursor=source.cursor)
        after = max(last, chunk_end)
    outcome.series = {source.engine: seen}
    if not seen:
        raise PrometheusError(
            f"no recorded series match ({source.engine}: {_selector_shown(source, source.engine)})"
            f" between {_rfc3339(datetime.fromtimestamp(start, UTC))} and "
            f"{_rfc3339(datetime.fromtimestamp(end, UTC))}: are PerfHub's recording rules "
            "(manage.py export_recording_rules) loaded, every step_s seconds?"
        )


def _selector_shown(source: PrometheusSource, kind: str) -> str:
    return "{" + (source.dcgm_selector if kind == "dcgm" else source.engine_selector) + "}"


def _document(source: PrometheusSource, scrapes: list[dict], now: datetime) -> dict:
    first, last = scrapes[0]["ts"], scrapes[-1]["ts"]
    key = f"{source.pk}:{source.engine_selector}:{source.dcgm_selector}:{first}:{last}"
    return {
        "batch_id": str(uuid.uuid5(_BATCH_NAMESPACE, key)),
        "host": source.host.name,
        "agent_version": "prometheus",
        "sent_at": _rfc3339(now),
        "scrapes": scrapes,
    }


# Prometheus's own errorType values (web/api/v1): named on the source's page. Anything else a
# target says (its error text, its body) is not repeated: see core.outbound.failure_reason.
ERROR_TYPES = frozenset(
    {"timeout", "canceled", "execution", "bad_data", "internal", "unavailable", "not_found",
     "not_acceptable"}
)  # fmt: skip


def query_range(base_url: str, query: str, start: int, end: int, step: int) -> list[dict]:
    """The matrix `query_range` answers. Raises PrometheusError saying what went wrong."""
    params = {"query": query, "start": start, "end": end, "step": step}
    return _matrix(base_url, "/api/v1/query_range", params)


def query_samples(base_url: str, selector: str, start: int, end: int) -> list[dict]:
    """The raw samples of `selector`'s series from `start` to `end` (both included: a range
    selector read at one instant), as a matrix. Raises PrometheusError."""
    params = {"query": f"{selector}[{max(end - start, 1)}s]", "time": end}
    return _matrix(base_url, "/api/v1/query", params)


def _matrix(base_url: str, path: str, params: dict) -> list[dict]:
    """Ask `path` and return the matrix it answers.

    The call goes through the outbound guard (loopback, private, link-local refused at
    connect time, redirects included); errors are described in fixed words, never with
    the answer's text, since `last_error` is readable by every signed-in user."""
    url = base_url.rstrip("/") + path
    try:
        response = outbound_request(
            "POST", url, data=params, timeout=settings.PERFHUB_PULL_TIMEOUT_S,
            allow_redirects=False,
        )  # fmt: skip
    except (requests.RequestException, OutboundRefused) as exc:
        raise PrometheusError(f"unreachable: {failure_reason(exc)}") from exc
    if response.is_redirect:
        raise PrometheusError(f"{answered(response.status_code, 'a redirect')}: not followed")
    try:
        body = response.json()
    except ValueError:
        raise PrometheusError(answered(response.status_code, "without Prometheus's JSON")) from None
    if not isinstance(body, dict):
        raise PrometheusError(answered(response.status_code, "without Prometheus's JSON"))
    if body.get("status") != "success":
        kind = body.get("errorType")
        named = kind if isinstance(kind, str) and kind in ERROR_TYPES else "unknown error"
        raise PrometheusError(
            f"Prometheus refused the query ({named}), {answered(response.status_code)}"
        )
    data = body.get("data") or {}
    if not isinstance(data, dict) or data.get("resultType") != "matrix":
        raise PrometheusError(answered(response.status_code, "without a matrix"))
    result = data.get("result") or []
    if not isinstance(result, list):
        raise PrometheusError(answered(response.status_code, "without a matrix"))
    return result


def _record(source: PrometheusSource, now: datetime, outcome: SyncOutcome) -> None:
    update: dict = {
        "status": PrometheusSource.Status.OK if outcome.ok else PrometheusSource.Status.ERROR,
        "last_error": outcome.error[:MAX_ERROR_CHARS],
        "last_attempt_at": now,
    }
    if outcome.series:
        update["series_counts"] = outcome.series
    if outcome.ok:
        update["last_success_at"] = now
    else:
        PULL_ERRORS.labels("prometheus").inc()
    PrometheusSource.objects.filter(pk=source.pk).update(**update)
    host_status = Host.Status.UP if outcome.ok else Host.Status.DOWN
    Host.objects.filter(pk=source.host_id).update(
        status=host_status, last_error=outcome.error[:MAX_ERROR_CHARS]
    )


def _rfc3339(ts: datetime) -> str:
    return ts.astimezone(UTC).isoformat().replace("+00:00", "Z")
