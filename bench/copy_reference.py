"""The database's own speed on the rows `bench/ingest.py` posts through the API: the same
batches' rows loaded with `COPY ... FROM STDIN`, as preformatted text on as many connections as
the API has workers (the budget's reference), or one `write_row` call per row (the old one).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

from bench.cpu_meter import Cpu, measure

COPY_CHUNK = 1 << 20  # bytes per write in the COPY-text reference


def _conninfo() -> dict:
    from django.conf import settings

    db = settings.DATABASES["default"]
    conninfo = dict(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"] or None,
        host=db["HOST"], port=db["PORT"] or None,
    )  # fmt: skip
    return {k: v for k, v in conninfo.items() if v}


def _copy_sql(model, fields) -> str:
    columns = ", ".join(model._meta.get_field(f.removesuffix("_id")).column for f in fields)
    return f"COPY {model._meta.db_table} ({columns}) FROM STDIN"


def _rows(batch: dict, host_id: int, service_id: int) -> tuple[list[tuple], list[tuple]]:
    """A batch's GPU and request rows as the API stores them (timestamps in UTC)."""

    def parse(ts: str) -> datetime:
        return datetime.fromisoformat(ts).astimezone(UTC)

    gpu_rows = [
        (host_id, parse(g["ts"]), g["index"], g["uuid"], g["name"], g["util"], g["mem_util"],
         g["mem_used_bytes"], g["mem_total_bytes"], g["power_w"], g["temp_c"],
         g["sm_clock_mhz"], g["sm_active"], g["sm_occupancy"], g["dram_active"])
        for g in batch["gpus"]
    ]  # fmt: skip
    request_rows = [
        (service_id, host_id, parse(r["ts"]), r["ttft_ms"], r["tpot_ms"], r["e2e_ms"],
         r["queue_ms"], r["prompt_tokens"], r["output_tokens"], r["ok"])
        for r in batch["requests"]
    ]  # fmt: skip
    return gpu_rows, request_rows


def _copy_text(rows: list[tuple]) -> bytes:
    """Rows as PostgreSQL COPY text (tab-separated, \\N for null). The bench's values need
    no escaping (no tabs, newlines or backslashes in them)."""

    def cell(value) -> str:
        if value is None:
            return "\\N"
        if value is True:
            return "t"
        if value is False:
            return "f"
        if isinstance(value, datetime):
            return value.isoformat()
        return str(value)

    return "".join("\t".join(map(cell, row)) + "\n" for row in rows).encode()


def run_copy_text(
    batches: list[dict],
    host_id: int,
    service_id: int,
    connections: int,
    per_batch: bool = False,
    cpu: list[Cpu] | None = None,
    repeat: int = 1,
) -> tuple[float, int]:
    """The fair reference: the same rows as preformatted COPY text, large chunks, one COPY per
    table per connection, `connections` connections at once (as many as the API's workers).
    `per_batch`: one transaction per batch instead (its two COPYs, then COMMIT), the unit the
    API must make durable before it answers; printed beside, not the budget. `cpu`: gets the
    CPU the timed part cost (PostgreSQL and this process). `repeat`: each connection loads
    its rows that many times over (as the long API run posts the same bodies again), so a
    reference the length of a million API samples needs no million rows formatted."""
    import psycopg

    from collectors.models import GpuSample, RequestSample
    from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS

    shares: list[list[tuple[bytes, bytes]]] = []
    stored = 0
    for i in range(connections):
        units = []
        gpu_rows, request_rows = [], []
        for b in batches[i::connections]:
            g, r = _rows(b, host_id, service_id)
            stored += (len(g) + len(r)) * repeat
            if per_batch:
                units.append((_copy_text(g), _copy_text(r)))
            else:
                gpu_rows += g
                request_rows += r
        if not per_batch:
            units = [(_copy_text(gpu_rows), _copy_text(request_rows))]
        shares.append(units * repeat)
    gpu_sql, request_sql = (
        _copy_sql(GpuSample, GPU_FIELDS),
        _copy_sql(RequestSample, REQUEST_FIELDS),
    )
    conns = [psycopg.connect(**_conninfo()) for _ in range(connections)]

    def load(i: int) -> None:
        conn = conns[i]
        for gpu_text, request_text in shares[i]:
            with conn.transaction(), conn.cursor() as cur:
                for sql, text in ((gpu_sql, gpu_text), (request_sql, request_text)):
                    with cur.copy(sql) as copy:
                        for at in range(0, len(text), COPY_CHUNK):
                            copy.write(text[at : at + COPY_CHUNK])

    try:
        with measure() as meter:
            started = time.perf_counter()
            with ThreadPoolExecutor(connections) as pool:
                list(pool.map(load, range(connections)))
            elapsed = time.perf_counter() - started
        if cpu is not None:
            cpu.append(meter.used)
    finally:
        for conn in conns:
            conn.close()
    return elapsed, stored


def run_copy_rows(batches: list[dict], host_id: int, service_id: int) -> tuple[float, int]:
    """The old reference, kept for comparison: rows written one `write_row` call at a time
    from Python tuples, one transaction per batch, on a single connection. It measures
    psycopg's per-row path more than the database, so it flatters the API."""
    import psycopg

    from collectors.models import GpuSample, RequestSample
    from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS

    prepared = [_rows(b, host_id, service_id) for b in batches]
    gpu_sql, request_sql = (
        _copy_sql(GpuSample, GPU_FIELDS),
        _copy_sql(RequestSample, REQUEST_FIELDS),
    )
    stored = 0
    with psycopg.connect(**_conninfo()) as conn:
        started = time.perf_counter()
        for gpu_rows, request_rows in prepared:
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(gpu_sql) as copy:
                    for row in gpu_rows:
                        copy.write_row(row)
                with cur.copy(request_sql) as copy:
                    for row in request_rows:
                        copy.write_row(row)
            stored += len(gpu_rows) + len(request_rows)
        elapsed = time.perf_counter() - started
    return elapsed, stored
