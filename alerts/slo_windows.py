"""SLO counts over many services at once, from the roll-ups: what `alerts.slo` turns into
compliance, budget and burn (the burn-rate rule kind, the dossier's verdict, the fleet row).

Everything is read from the service-merged rows (one per period whatever the number of
hosts; the roll-up keeps the hosts' SLO counts there). Per 500 services and for every window
at once: the requests and failures and each SLO key's exact joint count (kept per request at
roll-up time) are summed in the database, each row's window flags worked out once; the
latency distributions (sketch bins added, bucket deltas added, never percentiles averaged)
are read only where a count cannot be exact without them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from django.db import connection
from django.utils.dateparse import parse_datetime

from alerts.sources import Span, chunks, covering_spans, spans_filter
from analysis import buckets, sketches
from analysis.percentiles import LATENCY_METRICS
from analysis.slo import SloWindow
from collectors.distributions import merge_bucket_counts
from collectors.models import HOUR, MINUTE, ServiceMergedRollup

# SLO windows read whole hours and minutes only, not 5-minute rows: a coarse row's earliest
# start and its exact joint-count keys are those of its whole period (a row merging minutes
# rolled up before and after an SLO existed carries the key with part of the counts), and the
# edges are where a window's first data and such changes fall. Hours keep their old precision.
SLO_RESOLUTIONS = (HOUR, MINUTE)


def _spans(start: datetime, end: datetime) -> list[Span]:
    """(resolution, from, to): whole hours from hourly roll-ups, the minutes around them from
    minute ones (a 28-day window reads ~700 rows a service, not 40,000)."""
    return covering_spans(start, end, SLO_RESOLUTIONS)


def slo_windows(
    service_ids: Iterable[int],
    end: datetime,
    windows_s: Iterable[int],
    *,
    exact_keys: dict[int, set[str]] | None = None,
) -> dict[int, dict[int, SloWindow]]:
    """window_s -> service id -> `SloWindow` over `[end - window_s, end)`, for every window
    at once, per 500 services.

    Request and failure counts and the exact joint counts the roll-up kept per SLO key are
    added in the database, one row per service (and per key) for all the windows (FILTER per
    window). The distributions (the merged rows' sketches and bucket deltas, merged bin for
    bin, never percentiles averaged) are read only where a count needs them: for every
    service when `exact_keys` is None, else for a service with a latency SLO key (its set in
    `exact_keys`) that some window has no exact count of, e.g. an engine-only service or one
    whose rows were rolled up before the SLO existed. A fleet whose agents push requests thus
    reads no sketch at all (issue 26: the sketches of 3 days of hours were most of a round).
    """
    ids = sorted(set(service_ids))
    spans = {w: _spans(end - timedelta(seconds=w), end) for w in sorted(set(windows_s))}
    out: dict[int, dict[int, SloWindow]] = {w: {} for w in spans}
    if not spans or not ids:
        return out
    for chunk in chunks(ids):
        _add_slo_counts(out, chunk, spans)
        _add_slo_joint(out, chunk, spans, exact_keys)
        wanted = [sid for sid in chunk if _needs_distributions(out, sid, exact_keys)]
        if wanted:
            _add_slo_distributions(out, wanted, spans)
    return out


def _needs_distributions(
    out: dict[int, dict[int, SloWindow]], sid: int, exact_keys: dict[int, set[str]] | None
) -> bool:
    if exact_keys is None or sid not in exact_keys:
        return True
    keys = exact_keys[sid]
    for per_service in out.values():
        w = per_service.get(sid)
        if w is None:
            continue
        if any((w.exact_joint(k) or [0])[0] == 0 for k in keys):
            return True
    return False


def _spans_sql(ss: Iterable[Span]) -> tuple[str, list]:
    """Raw SQL (rows aliased `r`) matching the spans' rows, and its parameters."""
    adapt = connection.ops.adapt_datetimefield_value
    ss = list(ss)
    sql = " OR ".join(["(r.resolution_s = %s AND r.start >= %s AND r.start < %s)"] * len(ss))
    return f"({sql or '1 = 0'})", [p for r, a, b in ss for p in (r, adapt(a), adapt(b))]


def _flagged_rows(
    spans: dict[int, list[Span]], chunk: list[int], columns: str, source: str = "", params=()
) -> tuple[str, list]:
    """A subquery (and its parameters) of the chunk's service-merged rows in any window,
    each with `columns` and a flag per window (w0, w1, ...): the spans tested once per row,
    so each aggregate over a window is a FILTER on a flag."""
    flags, flag_params = [], []
    for i, ss in enumerate(spans.values()):
        sql, p = _spans_sql(ss)
        flags.append(f"{sql} AS w{i}")
        flag_params += p
    union_sql, union_params = _spans_sql({s for ss in spans.values() for s in ss})
    table = ServiceMergedRollup._meta.db_table
    sql = (
        f"SELECT r.service_id, {columns}, {', '.join(flags)} FROM {table} r {source} "
        f"WHERE r.service_id IN ({', '.join(['%s'] * len(chunk))}) AND {union_sql}"
    )
    return sql, [*flag_params, *params, *chunk, *union_params]


def _as_datetime(value) -> datetime | None:
    # SQLite hands raw aggregates of a datetime column back as text (UTC, naive).
    if isinstance(value, str):
        return parse_datetime(value).replace(tzinfo=UTC)
    return value


def _add_slo_counts(
    out: dict[int, dict[int, SloWindow]], chunk: list[int], spans: dict[int, list[Span]]
) -> None:
    """Pushed requests and failures, the engine's, rows with pushed requests and the first
    row of each window, summed over periods in the database (the hosts' sums are the merged
    rows', kept at roll-up time)."""
    rows_sql, params = _flagged_rows(
        spans,
        chunk,
        "r.start, r.requests, r.pushed_errors AS errors, r.scraped_requests, r.scraped_errors",
    )
    columns = []
    for i in range(len(spans)):
        f = f"FILTER (WHERE t.w{i})"
        columns += [f"COUNT(*) {f}", f"SUM(t.requests) {f}", f"SUM(t.errors) {f}",
                    f"SUM(t.scraped_requests) {f}", f"SUM(t.scraped_errors) {f}",
                    f"COUNT(*) FILTER (WHERE t.w{i} AND t.requests > 0)",
                    f"MIN(t.start) {f}"]  # fmt: skip
    sql = f"SELECT t.service_id, {', '.join(columns)} FROM ({rows_sql}) t GROUP BY t.service_id"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for sid, *values in cursor.fetchall():
            for i, w in enumerate(spans):
                rows, requests, errors, scraped, scraped_errors, pushed, first = values[
                    7 * i : 7 * i + 7
                ]
                if not rows:
                    continue
                out[w][sid] = SloWindow(
                    service_id=sid,
                    requests=int(requests or 0),
                    errors=int(errors or 0),
                    scraped_requests=float(scraped or 0.0),
                    scraped_errors=float(scraped_errors or 0.0),
                    pushed_rows=pushed,
                    first_start=_as_datetime(first),
                )


def _add_slo_joint(
    out: dict[int, dict[int, SloWindow]],
    chunk: list[int],
    spans: dict[int, list[Span]],
    exact_keys: dict[int, set[str]] | None,
) -> None:
    """Each service's SLO keys' exact joint counts ([judged, good]) and the rows carrying the
    key, per window, summed in the database: the key looked up in each row's `slo_good`
    (every key the rows hold without `exact_keys`)."""
    postgres = connection.vendor == "postgresql"
    params: list = []
    if exact_keys is None:  # every key the rows hold
        source = (
            "CROSS JOIN LATERAL jsonb_each(r.slo_good) e"
            if postgres
            else ", json_each(r.slo_good) e"
        )
        key, value = "e.key", "e.value"
    else:
        pairs = [(sid, key) for sid in chunk for key in sorted(exact_keys.get(sid, ()))]
        if not pairs:
            return
        values = ", ".join(["(%s, %s)"] * len(pairs))
        params = [p for pair in pairs for p in pair]
        source = f"JOIN (VALUES {values}) v ON v.column1 = r.service_id "
        if postgres:
            source += "AND r.slo_good ? v.column2"
            key, value = "v.column2", "(r.slo_good -> v.column2)"
        else:  # SQLite (the test database): its JSON1 rows, matched on the key
            source += "JOIN json_each(r.slo_good) e ON e.key = v.column2"
            key, value = "v.column2", "e.value"
    if postgres:
        judged, good = f"({value} ->> 0)::bigint", f"({value} ->> 1)::bigint"
    else:
        judged, good = f"json_extract({value}, '$[0]')", f"json_extract({value}, '$[1]')"
    rows_sql, params = _flagged_rows(
        spans, chunk, f"{key} AS key, {judged} AS judged, {good} AS good", source, params
    )
    columns = []
    for i in range(len(spans)):
        f = f"FILTER (WHERE t.w{i})"
        columns += [f"SUM(t.judged) {f}", f"SUM(t.good) {f}", f"COUNT(*) {f}"]
    sql = (
        f"SELECT t.service_id, t.key, {', '.join(columns)} FROM ({rows_sql}) t "
        "GROUP BY t.service_id, t.key"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        for sid, key_name, *sums in cursor.fetchall():
            for i, w in enumerate(spans):
                judged_n, good_n, rows = sums[3 * i : 3 * i + 3]
                sw = out[w].get(sid)
                if not rows or sw is None:
                    continue
                sw.joint[key_name] = [int(judged_n or 0), int(good_n or 0)]
                sw.joint_rows[key_name] = rows


def _add_slo_distributions(
    out: dict[int, dict[int, SloWindow]], chunk: list[int], spans: dict[int, list[Span]]
) -> None:
    """Each latency metric's merged distribution per window, from the service-merged rows."""
    union = spans_filter({s for ss in spans.values() for s in ss})
    held_by: dict[tuple[int, datetime], list[int]] = {}

    def windows_of(resolution: int, start: datetime) -> list[int]:
        # Every service's rows share their periods: worked out once per period.
        key = (resolution, start)
        if key not in held_by:
            held_by[key] = [
                w
                for w, ss in spans.items()
                if any(r == resolution and a <= start < b for r, a, b in ss)
            ]
        return held_by[key]

    columns = ["service_id", "resolution_s", "start"]
    for m in LATENCY_METRICS:
        columns += [f"{m}_count", f"{m}_sketch", f"{m}_buckets"]
    blobs: dict[tuple[int, int, str], list[bytes]] = defaultdict(list)
    counts: dict[tuple[int, int, str], list[buckets.BucketCounts]] = defaultdict(list)
    rows = ServiceMergedRollup.objects.filter(union, service_id__any=chunk)
    for row in rows.values_list(*columns):
        sid, resolution, start = row[:3]
        held = [w for w in windows_of(resolution, start) if sid in out[w]]
        for i, m in enumerate(LATENCY_METRICS):
            count, blob, data = row[3 + 3 * i : 6 + 3 * i]
            bc = buckets.BucketCounts.from_dict(data) if data else None
            for w in held:
                if blob is not None and count:
                    blobs[(w, sid, m)].append(blob)
                if bc is not None:
                    counts[(w, sid, m)].append(bc)
    for (w, sid, m), items in blobs.items():
        out[w][sid].sketches[m] = sketches.merge_serialized(items)
    for (w, sid, m), items in counts.items():
        bc = merge_bucket_counts(items)
        if bc is not None:
            out[w][sid].buckets[m] = bc
