"""Roll-up writes vs the database's own COPY of the same rows.

    DATABASE_URL=postgres://... .venv/bin/python bench/rollups.py [--rows 20000] [--rounds 5]

Every roll-up row (the job's minutes, their 5-minute and hourly rows, the service-merged rows,
the demo's history) is stored by `collectors.storage.insert_instances`: COPY on PostgreSQL of
model instances, each value prepared by its Django field. Timed here on `--rows` minute rows
of one host and service, with the three latency sketches, bucket and SLO-count JSON a live row
carries, each round in a transaction rolled back afterwards (the table does not grow):

- `insert_instances`, the path in use;
- `bulk_create` in batches of 200, the path it replaced, for comparison;
- the reference: the same rows as COPY text (made by `COPY ... TO STDOUT` of the rows once
  stored, so byte for byte what the server stores), loaded with `COPY ... FROM STDIN` in
  1 MiB writes: what `psql \\copy` of a prepared file does.

Prints rows/s of each, best of `--rounds`, and the ratios to the reference. A measurement,
not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

COPY_CHUNK = 1 << 20


class Rollback(Exception):
    """Raised to leave a timed transaction without keeping its rows."""


def fixtures():
    from collectors.models import Host
    from dossiers.models import Service, Team

    team, _ = Team.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    service, _ = Service.objects.get_or_create(
        slug="bench-rollups",
        defaults=dict(
            name="Bench roll-ups", team=team, model_name="m", model_params_b=7, engine="vllm",
            gpu_model="H100", gpu_hour_price=2,
        ),
    )  # fmt: skip
    host, _ = Host.objects.get_or_create(name="bench-rollups-host")
    return service, host


def make_rows(n: int, service, host) -> list:
    """`n` finished minute rows, as `rollup_from_traffic` makes them."""
    import numpy as np

    from analysis import sketches
    from bench.dashboard import set_sketch
    from collectors.models import MINUTE, ServiceRollup

    rng = np.random.default_rng(3)
    start = datetime(2020, 1, 1, tzinfo=UTC)  # far from any live data of the bench database
    rows = []
    for i in range(n):
        row = ServiceRollup(
            service=service, host=host, resolution_s=MINUTE, start=start + timedelta(minutes=i),
            requests=120, prompt_tokens=61_440, output_tokens=15_360, request_seconds=60.0,
            qps=2.0, prompt_tps=1024.0, generation_tps=256.0, gauge_samples=4,
            running_mean=12.5, waiting_mean=0.5, kv_cache_mean=0.4,
            slo_good={"e2e_p99": {"good": 119, "total": 120}},
        )  # fmt: skip
        for metric, scale in (("e2e", 1500.0), ("ttft", 150.0), ("tpot", 20.0)):
            values = rng.lognormal(0.0, 0.4, 120) * scale
            set_sketch(row, metric, sketches.from_values(values.tolist()), sketches)
        row.e2e_buckets = {"le": [500, 1000, 2000, "+Inf"], "counts": [3, 40, 110, 120]}
        rows.append(row)
    return rows


def timed(write) -> float:
    """Seconds `write()` took inside a transaction that is then rolled back."""
    from django.db import transaction

    try:
        with transaction.atomic():
            started = time.perf_counter()
            write()
            elapsed = time.perf_counter() - started
            raise Rollback
    except Rollback:
        pass
    return elapsed


def copy_text_of(rows) -> tuple[str, bytes]:
    """(COPY ... FROM STDIN, the rows as the server's own COPY text), read back from the rows
    stored once in a transaction that is rolled back."""
    from django.db import connection, transaction

    from collectors import storage
    from collectors.models import ServiceRollup

    quote = connection.ops.quote_name
    meta = ServiceRollup._meta
    columns = ", ".join(quote(f.column) for f in meta.concrete_fields if not f.primary_key)
    table = quote(meta.db_table)
    statement = f"COPY {table} ({columns}) FROM STDIN"
    service_id, host_id = rows[0].service_id, rows[0].host_id
    data = bytearray()
    try:
        with transaction.atomic():
            storage.insert_instances(ServiceRollup, rows)
            with connection.cursor() as cursor:
                select = (
                    f"COPY (SELECT {columns} FROM {table} WHERE service_id = {int(service_id)}"
                    f" AND host_id = {int(host_id)} AND start < '2021-01-01') TO STDOUT"
                )
                with cursor.cursor.copy(select) as copy:
                    for block in copy:
                        data += block
            raise Rollback
    except Rollback:
        pass
    return statement, bytes(data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()

    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from collectors import storage
    from collectors.models import ServiceRollup

    if connection.vendor != "postgresql":
        raise SystemExit("bench/rollups.py needs PostgreSQL (DATABASE_URL): COPY is the point")
    call_command("migrate", verbosity=0)
    service, host = fixtures()
    rows = make_rows(args.rows, service, host)
    statement, text = copy_text_of(rows)

    def reference() -> None:
        with connection.cursor() as cursor, cursor.cursor.copy(statement) as copy:
            for i in range(0, len(text), COPY_CHUNK):
                copy.write(text[i : i + COPY_CHUNK])

    paths = {
        "insert_instances (COPY)": lambda: storage.insert_instances(ServiceRollup, rows),
        "bulk_create (before)": lambda: ServiceRollup.objects.bulk_create(rows, batch_size=200),
        "COPY text (reference)": reference,
    }
    best = {name: float("inf") for name in paths}
    for r in range(args.rounds):
        line = []
        for name, write in paths.items():
            for row in rows:  # bulk_create sets the pks it reads back: start afresh
                row.pk = None
            seconds = timed(write)
            best[name] = min(best[name], seconds)
            line.append(f"{name} {args.rows / seconds:,.0f} rows/s")
        print(f"round {r + 1}: " + " | ".join(line))
    print(f"{args.rows:,} minute rows, {len(text) / args.rows:,.0f} bytes each as COPY text")
    ref = best["COPY text (reference)"]
    for name, seconds in best.items():
        print(f"best: {name:24s} {args.rows / seconds:10,.0f} rows/s  ratio to COPY text "
              f"{ref / seconds:.2f}")  # fmt: skip
    print("load average at the end: {:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg()))


if __name__ == "__main__":
    main()
