"""Bulk writes of raw rows: psycopg 3's COPY on PostgreSQL, `bulk_create` elsewhere.

COPY streams rows in one round trip with no per-row SQL to parse or plan, which is what lets
the ingest API keep up with a raw COPY (DESIGN.md section 8). It uses COPY's binary format with
the column types declared up front: psycopg dumps each value in C without formatting text,
and the server has no text (floats, timestamps) to parse. It runs inside the caller's
transaction, so a rejected batch still stores nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.db import connection, models

# Rows per INSERT on the fallback path (SQLite caps bound parameters per statement).
FALLBACK_BATCH_SIZE = 500


def bulk_insert(model: type[models.Model], fields: Sequence[str], rows: Sequence[tuple]) -> str:
    """Insert `rows` (tuples of values for `fields`, attnames such as `host_id`).

    Returns the method used ("copy" or "bulk_create"), so callers and tests can tell.
    """
    if not rows:
        return "none"
    if connection.vendor == "postgresql":
        _copy(model, fields, rows)
        return "copy"
    model.objects.bulk_create(
        [model(**dict(zip(fields, row, strict=True))) for row in rows],
        batch_size=FALLBACK_BATCH_SIZE,
    )
    return "bulk_create"


def _copy(model: type[models.Model], fields: Sequence[str], rows: Sequence[tuple]) -> None:
    meta = model._meta
    by_attname = {f.attname: f for f in meta.concrete_fields}
    columns = [by_attname[name].column for name in fields]
    # "varchar(100)" -> "varchar": psycopg knows types by name, without modifiers.
    types = [re.sub(r"\(.*\)$", "", by_attname[name].db_type(connection)) for name in fields]
    quote = connection.ops.quote_name
    sql = "COPY {} ({}) FROM STDIN (FORMAT BINARY)".format(
        quote(meta.db_table), ", ".join(quote(c) for c in columns)
    )
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        copy.set_types(types)
        write_row = copy.write_row
        for row in rows:
            write_row(row)
