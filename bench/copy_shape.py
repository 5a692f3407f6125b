"""What a COPY statement costs PostgreSQL beyond its rows: the same request rows stored as one
COPY per transaction of N rows (what the ingest API does with a batch of N requests) against one
COPY of all of them (the shape of `bench/ingest.py`'s reference), on one connection each.

    DATABASE_URL=postgres://... .venv/bin/python bench/copy_shape.py [--rows 80000]
        [--sizes 250,1000,4000] [--rounds 5]

Rows are written the way ingest writes them (`collectors.storage`, binary COPY, inside a
transaction) into the real, partitioned request-sample table. CPU is every PostgreSQL
process's (from /proc), per 1,000 rows, median of rounds that alternate the shapes; the ratio
is the one big COPY's cost over each shape's. A measurement, not a test.

Why it matters (docs/ingest-speed.md): for each COPY statement PostgreSQL builds one tuple slot
per row it buffers (up to 1,000) and drops them at the end. On PostgreSQL 15 each slot's pin of
the table's row type goes into the statement's resource owner, a hash table in which every one
of these identical entries lands in the same probe chain, so the bookkeeping grows faster than
the slot count: `perf` puts a fifth of a backend's CPU there at 1,000 rows a COPY. A batch of
1,000 requests pays it in full; one statement of 80,000 rows pays it once.

Ingest now sends its COPY row at a time on those releases (a volatile WHERE that is always
true turns the buffering off: `collectors.storage._row_at_a_time`), so the shapes above are
PostgreSQL's buffered COPY, and the last line is what ingest sends.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import uuid
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

from bench.cpu_meter import measure  # noqa: E402
from bench.ingest import setup_fixtures, vacuum  # noqa: E402


def request_rows(n: int, service_id: int, host_id: int) -> list[tuple]:
    """`n` rows in `collectors.services.ingest.REQUEST_FIELDS` order, 10 ms apart, ending now."""
    start = datetime.now(UTC) - timedelta(milliseconds=10 * n)
    return [
        (service_id, host_id, start + timedelta(milliseconds=10 * i), 40.0 + i % 97, 20.0,
         1000.0 + i % 997, 3.0, 512, 128, True)
        for i in range(n)
    ]  # fmt: skip


@contextmanager
def buffered(on: bool):
    """COPY as PostgreSQL buffers it by default (`on`), or as ingest sends it before 17 (one
    row at a time: `collectors.storage._row_at_a_time`)."""
    from collectors import storage

    row_at_a_time = storage._row_at_a_time
    storage._row_at_a_time = (lambda: "") if on else row_at_a_time
    storage._copy_statement.cache_clear()
    try:
        yield
    finally:
        storage._row_at_a_time = row_at_a_time
        storage._copy_statement.cache_clear()


def store(rows: list[tuple], per_statement: int, one_transaction: bool = False) -> None:
    """`rows` as COPYs of `per_statement` rows, each in its own transaction as ingest stores a
    batch (or all in one transaction: what the commits cost apart from the statements)."""
    from django.db import transaction

    from collectors import storage
    from collectors.models import RequestSample
    from collectors.services.ingest import REQUEST_FIELDS

    def copy(chunk: list[tuple]) -> None:
        storage.bulk_insert_all([(RequestSample, REQUEST_FIELDS, chunk)], keys_locked=True)

    chunks = [rows[i : i + per_statement] for i in range(0, len(rows), per_statement)]
    if one_transaction:  # no savepoint a COPY: only the commits are left out
        with transaction.atomic():
            for chunk in chunks:
                copy(chunk)
        return
    for chunk in chunks:
        with transaction.atomic():
            copy(chunk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=80_000, help="rows stored by each shape")
    parser.add_argument("--sizes", default="250,1000,4000", help="rows per COPY to compare")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (this is about its COPY).")
    sizes = [int(s) for s in args.sizes.split(",")]

    service_slug, host_name, _ = setup_fixtures(f"copy-{uuid.uuid4().hex[:8]}")  # Django set up
    from collectors import storage
    from collectors.models import Host, RequestSample
    from dossiers.models import Service

    service = Service.objects.get(slug=service_slug)
    host = Host.objects.get(name=host_name)
    rows = request_rows(args.rows, service.pk, host.pk)
    # name -> (rows a COPY, one transaction for all, PostgreSQL's buffering)
    shapes = {f"one COPY per transaction of {n:,} rows": (n, False, True) for n in sizes}
    shapes["COPYs of 1,000 rows, all in one transaction"] = (1000, True, True)
    shapes[f"one COPY of all {args.rows:,} rows"] = (args.rows, True, True)
    if storage._row_at_a_time():  # what ingest sends on this server
        shapes["one COPY per transaction of 1,000 rows, row at a time"] = (1000, False, False)
    cpu: dict[str, list[float]] = {name: [] for name in shapes}
    try:
        store(rows[:1000], 1000)  # warm: the connection, the partition, the caches
        for _ in range(args.rounds):
            for name, (per_statement, one_transaction, on) in shapes.items():
                with buffered(on), measure() as meter:
                    store(rows, per_statement, one_transaction)
                cpu[name].append(meter.used.postgres / len(rows) * 1e6)  # ms per 1,000 rows
    finally:
        RequestSample.objects.filter(host=host).delete()
        host.delete()
        service.delete()
        vacuum(RequestSample)

    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        version = cursor.fetchone()[0]
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"PostgreSQL {version}; {args.rows:,} request rows a shape, {args.rounds} rounds;")
    print(f"load average at the end: {load}")
    reference = statistics.median(cpu[f"one COPY of all {args.rows:,} rows"])
    for name, values in cpu.items():
        median = statistics.median(values)
        print(
            f"{name:<56} PostgreSQL CPU {median:5.2f} ms per 1,000 rows"
            f" (rounds {min(values):.2f}-{max(values):.2f}) | one big COPY / this"
            f" {reference / median:.2f}"
        )


if __name__ == "__main__":
    main()
