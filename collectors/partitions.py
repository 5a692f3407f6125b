"""Daily range partitions of the raw tables on PostgreSQL (issue 14).

Raw rows (`RequestSample`, `GpuSample`, `ScrapeWindow`) are written once, read by time range
(roll-ups, a minute at a time) and dropped by age. Partitioned by day on `ts`, retention
detaches and drops whole days (no DELETE, no bloat, no vacuum debt) and every time-bounded
query is pruned to the day it touches.

Why daily and not weekly: retention is in days (14 by default), so daily partitions keep at
most one day more than asked, where weekly ones keep up to six (about 40% more raw data at
14 days); a day of raw rows is also the unit the retention benchmark drops. Partitions stay
few (retention + days ahead, about 20 per table), which the planner prunes at no visible cost.

Layout per table: `<table>_pYYYYMMDD` for [day, day + 1), a `<table>_pdefault` default
partition that catches a row for which no day exists yet (it never fails an insert), and, in a
database converted from plain tables, `<table>_plegacy` holding the rows from before the
conversion until retention drops it whole. `ensure_partitions` (beat, hourly) creates the days
ahead and moves any rows the default partition caught into their own day.

SQLite (the embedded default) keeps plain tables; retention there is a DELETE.
"""

from __future__ import annotations

import logging
from datetime import UTC, date, datetime, timedelta

from django.db import connection, transaction

from collectors.models import GpuSample, RequestSample, ScrapeWindow

log = logging.getLogger(__name__)

PARTITIONED_MODELS = (RequestSample, GpuSample, ScrapeWindow)
DAYS_AHEAD = 3
LEGACY = "plegacy"
DEFAULT = "pdefault"


def enabled() -> bool:
    return connection.vendor == "postgresql"


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day, tzinfo=UTC)


def partition_name(table: str, d: date) -> str:
    return f"{table}_p{d:%Y%m%d}"


def _q(name: str) -> str:
    return connection.ops.quote_name(name)


def is_partitioned(table: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid "
            "WHERE c.relname = %s AND c.relnamespace = 'public'::regnamespace",
            [table],
        )
        return cursor.fetchone() is not None


def partitions(table: str) -> list[tuple[str, datetime | None, datetime | None]]:
    """(name, from, to) of the table's partitions; None bounds for the default (and open)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, pg_get_expr(c.relpartbound, c.oid) FROM pg_inherits i "
            "JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent "
            "WHERE p.relname = %s ORDER BY c.relname",
            [table],
        )
        rows = cursor.fetchall()
    out = []
    for name, bound in rows:
        if bound == "DEFAULT":
            out.append((name, None, None))
            continue
        # FOR VALUES FROM ('2026-12-01 00:00:00+00') TO ('2026-12-02 00:00:00+00')
        parts = bound.split("'")
        low = None if "MINVALUE" in bound.split("TO")[0] else _parse(parts[1])
        high = _parse(parts[-2])
        out.append((name, low, high))
    return out


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text).astimezone(UTC)


def create_day(table: str, d: date) -> bool:
    """Create the partition of day `d` (if missing), moving rows the default partition caught
    for that day into it. Returns whether it was created."""
    name = partition_name(table, d)
    low, high = _day(d), _day(d + timedelta(days=1))
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT to_regclass(%s)", [name])
        if cursor.fetchone()[0] is not None:
            return False
        default = f"{table}_{DEFAULT}"
        cursor.execute(
            f"SELECT 1 FROM {_q(default)} WHERE ts >= %s AND ts < %s LIMIT 1", [low, high]
        )
        if cursor.fetchone() is None:
            cursor.execute(
                f"CREATE TABLE {_q(name)} PARTITION OF {_q(table)} FOR VALUES FROM (%s) TO (%s)",
                [low, high],
            )
            return True
        # Rows for this day sit in the default partition: attaching the day would violate the
        # default's constraint, so build the day beside it, move the rows, then attach.
        cursor.execute(f"CREATE TABLE {_q(name)} (LIKE {_q(table)} INCLUDING DEFAULTS)")
        cursor.execute(
            f"WITH moved AS (DELETE FROM {_q(default)} WHERE ts >= %s AND ts < %s RETURNING *) "
            f"INSERT INTO {_q(name)} SELECT * FROM moved",
            [low, high],
        )
        cursor.execute(
            f"ALTER TABLE {_q(table)} ATTACH PARTITION {_q(name)} FOR VALUES FROM (%s) TO (%s)",
            [low, high],
        )
        return True


def ensure_partitions(*, now: datetime | None = None, days_back: int = 0) -> list[str]:
    """Create the daily partitions from `days_back` days ago to DAYS_AHEAD days ahead (the
    beat job; also moves rows the default partition caught). Returns partitions created."""
    if not enabled():
        return []
    today = (now or datetime.now(UTC)).astimezone(UTC).date()
    created = []
    for model in PARTITIONED_MODELS:
        table = model._meta.db_table
        if not is_partitioned(table):
            continue
        first_free = _first_free_day(table)
        wanted = {today + timedelta(days=k) for k in range(-days_back, DAYS_AHEAD + 1)}
        wanted |= set(_days_in_default(table))
        for d in sorted(wanted):
            if first_free is not None and d < first_free:
                continue  # covered by the legacy partition
            if create_day(table, d):
                created.append(partition_name(table, d))
    return created


def _first_free_day(table: str) -> date | None:
    """The day the legacy partition (if any) ends."""
    for name, _, high in partitions(table):
        if name.endswith(LEGACY) and high is not None:
            return high.date()
    return None


def _days_in_default(table: str) -> list[date]:
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT DISTINCT date_trunc('day', ts AT TIME ZONE 'UTC')::date "
            f"FROM {_q(table + '_' + DEFAULT)}"
        )
        return [row[0] for row in cursor.fetchall()]


def drop_before(table: str, cutoff: datetime) -> int:
    """Detach and drop every partition wholly older than `cutoff`; returns partitions dropped.

    Then the few rows older than `cutoff` left in partitions that straddle it (the default
    and legacy ones) are deleted, so retention is exact whatever the layout."""
    dropped = 0
    for name, _, high in partitions(table):
        if high is None or high > cutoff:
            continue
        with transaction.atomic(), connection.cursor() as cursor:
            # Foreign keys are checked at commit (deferred); rows written earlier in this
            # transaction would leave checks pending on the table, which DROP refuses.
            cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute(f"ALTER TABLE {_q(table)} DETACH PARTITION {_q(name)}")
            cursor.execute(f"DROP TABLE {_q(name)}")
        dropped += 1
    return dropped


def prune_leftovers(table: str, cutoff: datetime) -> int:
    """Delete rows older than `cutoff` from the default and legacy partitions only (day
    partitions go whole, in `drop_before`, so a day lives at most one day past the cutoff)."""
    deleted = 0
    with connection.cursor() as cursor:
        for name, _, _ in partitions(table):
            if name.endswith(DEFAULT) or name.endswith(LEGACY):
                cursor.execute(f"DELETE FROM {_q(name)} WHERE ts < %s", [cutoff])
                deleted += cursor.rowcount
    return deleted


def convert(table: str, *, today: date | None = None) -> None:
    """Turn plain `table` into a table partitioned by day on `ts`, keeping its rows, indexes
    and foreign keys (the migration; PostgreSQL only, each step brief):

    1. the plain table is renamed `<table>_plegacy` and its indexes get a `_l` suffix;
    2. a partitioned parent takes the old name, with the same columns, identity (continuing
       after the old ids), foreign keys and indexes (the old index names, on the parent);
    3. the old table is attached as the partition of everything before the day after
       tomorrow: a CHECK constraint validated first (a scan that does not block writers) lets
       ATTACH skip its own scan; its indexes are attached to the parent's;
    4. the default partition and the days ahead are created.
    Nothing is copied: retention drops the legacy partition whole once it has aged out. An
    empty table (a new database) gets no legacy partition: only the default and the days.
    """
    if is_partitioned(table):
        return
    today = today or datetime.now(UTC).date()
    legacy = f"{table}_{LEGACY}"
    bound = _day(today + timedelta(days=2))
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i.relname, pg_get_indexdef(i.oid) FROM pg_index x "
            "JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid "
            "WHERE t.relname = %s AND NOT x.indisprimary",
            [table],
        )
        indexes = cursor.fetchall()
        cursor.execute(
            "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint "
            "WHERE conrelid = %s::regclass AND contype = 'f'",
            [table],
        )
        foreign_keys = cursor.fetchall()
        cursor.execute(f"SELECT coalesce(max(id), 0) + 1 FROM {_q(table)}")
        next_id = cursor.fetchone()[0]
        cursor.execute(f"SELECT NOT EXISTS (SELECT 1 FROM {_q(table)})")
        empty = cursor.fetchone()[0]

        cursor.execute(f"ALTER TABLE {_q(table)} RENAME TO {_q(legacy)}")
        for name, _ in indexes:
            cursor.execute(f"ALTER INDEX {_q(name)} RENAME TO {_q(_legacy_index(name))}")
        cursor.execute(
            f"CREATE TABLE {_q(table)} (LIKE {_q(legacy)} INCLUDING DEFAULTS INCLUDING IDENTITY)"
            " PARTITION BY RANGE (ts)"
        )
        cursor.execute(f"ALTER TABLE {_q(table)} ALTER COLUMN id RESTART WITH {int(next_id)}")
        for name, definition in foreign_keys:
            cursor.execute(
                f"ALTER TABLE {_q(legacy)} RENAME CONSTRAINT {_q(name)} TO "
                f"{_q(_legacy_index(name))}"
            )
            cursor.execute(f"ALTER TABLE {_q(table)} ADD CONSTRAINT {_q(name)} {definition}")
        for name, definition in indexes:
            only = "" if empty else "ONLY "
            on_parent = definition.replace(f" ON public.{legacy} ", f" ON {only}public.{table} ")
            on_parent = on_parent.replace(f"INDEX {_legacy_index(name)} ", f"INDEX {name} ")
            cursor.execute(on_parent)
        if empty:  # a new database: nothing to keep, days from today on
            cursor.execute(f"DROP TABLE {_q(legacy)}")
            cursor.execute(
                f"CREATE TABLE {_q(table + '_' + DEFAULT)} PARTITION OF {_q(table)} DEFAULT"
            )
            for k in range(0, 1 + DAYS_AHEAD):
                create_day(table, today + timedelta(days=k))
            return

        check = f"{table}_legacy_bound"[:63]
        cursor.execute(
            f"ALTER TABLE {_q(legacy)} ADD CONSTRAINT {_q(check)} "
            f"CHECK (ts IS NOT NULL AND ts < %s) NOT VALID",
            [bound],
        )
        cursor.execute(f"ALTER TABLE {_q(legacy)} VALIDATE CONSTRAINT {_q(check)}")
        cursor.execute(
            f"ALTER TABLE {_q(table)} ATTACH PARTITION {_q(legacy)} "
            f"FOR VALUES FROM (MINVALUE) TO (%s)",
            [bound],
        )
        cursor.execute(f"ALTER TABLE {_q(legacy)} DROP CONSTRAINT {_q(check)}")
        for name, _ in indexes:
            cursor.execute(f"ALTER INDEX {_q(name)} ATTACH PARTITION {_q(_legacy_index(name))}")
        cursor.execute(f"CREATE TABLE {_q(table + '_' + DEFAULT)} PARTITION OF {_q(table)} DEFAULT")
    for k in range(2, 2 + DAYS_AHEAD):
        create_day(table, today + timedelta(days=k))


def _legacy_index(name: str) -> str:
    return f"{name[:61]}_l"
