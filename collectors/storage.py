"""Bulk writes of raw rows: psycopg 3's COPY on PostgreSQL, `bulk_create` elsewhere.

COPY streams rows in one round trip with no per-row SQL to parse or plan, which is what lets
the ingest API keep up with a raw COPY (DESIGN.md section 8). It uses COPY's binary format with
the column types declared up front: psycopg dumps each value in C without formatting text,
and the server has no text (floats, timestamps) to parse. It runs inside the caller's
transaction, so a rejected batch still stores nothing.

The raw tables carry no per-row foreign keys (issue 26: PostgreSQL checked each row's host and
service with a trigger at COMMIT, 2.6 times the cost of inserting it). Instead every call
checks the batch's distinct keys once (`check_keys`): on PostgreSQL it locks the rows they
name `FOR KEY SHARE` until the transaction ends, so a concurrent delete of that host or service
waits for the batch to commit and then deletes its rows with the rest (the delete takes the row
`FOR UPDATE` first: `collectors.signals`); a key naming no row refuses the whole call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from django.db import IntegrityError, connection, models

# Rows per INSERT on the fallback path (SQLite caps bound parameters per statement).
FALLBACK_BATCH_SIZE = 500


class OrphanRows(IntegrityError):
    """Rows naming a host or service that does not exist (or was deleted meanwhile)."""

    def __init__(self, field: str, missing: list):
        self.field = field
        self.missing = missing
        super().__init__(f"{field}: no such row {missing[:5]}")


def check_keys(model: type[models.Model], fields: Sequence[str], rows: Sequence[tuple]) -> None:
    """Raise `OrphanRows` unless every foreign key in `fields` that the database does not
    check (`db_constraint=False`) names an existing row; lock those rows FOR KEY SHARE on
    PostgreSQL (held to the end of the caller's transaction). One query per such key."""
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    for i, name in enumerate(fields):
        field = by_attname[name]
        if not field.is_relation or field.db_constraint:
            continue
        ids = sorted({row[i] for row in rows})
        target = field.related_model
        if None in ids:
            raise OrphanRows(f"{model.__name__}.{field.name}", [None])
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT {pk} FROM {table} WHERE {pk} = ANY(%s) FOR KEY SHARE".format(
                        pk=connection.ops.quote_name(target._meta.pk.column),
                        table=connection.ops.quote_name(target._meta.db_table),
                    ),
                    [ids],
                )
                found = {r[0] for r in cursor.fetchall()}
        else:
            found = set(target._base_manager.filter(pk__in=ids).values_list("pk", flat=True))
        missing = [pk for pk in ids if pk not in found]
        if missing:
            raise OrphanRows(f"{model.__name__}.{field.name}", missing)


def bulk_insert(model: type[models.Model], fields: Sequence[str], rows: Sequence[tuple]) -> str:
    """Insert `rows` (tuples of values for `fields`, attnames such as `host_id`), after
    checking the keys the database does not (`check_keys`).

    Returns the method used ("copy" or "bulk_create"), so callers and tests can tell.
    """
    if not rows:
        return "none"
    check_keys(model, fields, rows)
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
