"""Bulk writes of raw and roll-up rows: psycopg 3's COPY on PostgreSQL, `bulk_create` elsewhere.

COPY streams rows in one round trip with no per-row SQL to parse or plan, which is what lets
the ingest API keep up with a raw COPY (docs/measurements.md). It uses COPY's binary format with
the column types declared up front: psycopg dumps each value in C without formatting text,
and the server has no text (floats, timestamps) to parse. It runs inside the caller's
transaction, so a rejected batch still stores nothing. Before PostgreSQL 17 the statement asks
for its rows to go in one at a time (`_row_at_a_time`: cheaper there for a batch's thousand).

Roll-up rows are model instances (`insert_instances`): `bulk_create` would compile one
INSERT of thousands of placeholders per batch, which psycopg then splits again on the client,
more time than the database spends storing the rows.

The raw tables carry no per-row foreign keys (issue 26: PostgreSQL checked each row's host and
service with a trigger at COMMIT, 2.6 times the cost of inserting it). Instead every call
checks the batch's distinct keys once (`check_keys_of`, or the caller's own `lock_rows`, as
ingest's does): on PostgreSQL it locks the rows they
name `FOR KEY SHARE` until the transaction ends, so a concurrent delete of that host or service
waits for the batch to commit and then deletes its rows with the rest (the delete takes the row
`FOR UPDATE` first: `collectors.signals`); a key naming no row refuses the whole call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connection, connections, models

# Rows per INSERT on the fallback path (SQLite caps bound parameters per statement).
FALLBACK_BATCH_SIZE = 500


class OrphanRows(IntegrityError):
    """Rows naming a host or service that does not exist (or was deleted meanwhile)."""

    def __init__(self, field: str, missing: list):
        self.field = field
        self.missing = missing
        super().__init__(f"{field}: no such row {missing[:5]}")


Table = tuple[type[models.Model], Sequence[str], Sequence[tuple]]


def check_keys_of(tables: Sequence[Table]) -> None:
    """Raise `OrphanRows` unless every foreign key of the tables' rows that the database does
    not check (`db_constraint=False`) names an existing row; on PostgreSQL lock those rows FOR
    KEY SHARE (held to the end of the caller's transaction). Each referenced table is read
    once for the distinct ids all the tables name, every table in one statement (`lock_rows`)."""
    # target model -> {id: the first "Model.field" naming it}, for the error
    wanted: dict[type[models.Model], dict[Any, str]] = {}
    for model, fields, rows in tables:
        for i, field in _unchecked_keys(model, tuple(fields)):
            label = f"{model.__name__}.{field.name}"
            ids = {row[i] for row in rows}
            if None in ids:
                raise OrphanRows(label, [None])
            named = wanted.setdefault(field.related_model, {})
            for pk in ids:
                named.setdefault(pk, label)
    if not wanted:
        return
    found = _existing(wanted)
    for target, named in wanted.items():
        missing = sorted(pk for pk in named if pk not in found[target])
        if missing:
            raise OrphanRows(
                named[missing[0]], [pk for pk in missing if named[pk] == named[missing[0]]]
            )


@functools.cache
def _unchecked_keys(model: type[models.Model], fields: tuple[str, ...]) -> list[tuple[int, Any]]:
    """(position in `fields`, field) of the foreign keys the database does not check."""
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    return [
        (i, by_attname[name])
        for i, name in enumerate(fields)
        if by_attname[name].is_relation and not by_attname[name].db_constraint
    ]


def _existing(wanted: dict) -> dict[type[models.Model], set]:
    """The ids of each target that exist, locked FOR KEY SHARE on PostgreSQL."""
    found = lock_rows({target: ("pk", ids) for target, ids in wanted.items()})
    return {target: set(by_value) for target, by_value in found.items()}


def lock_rows(
    wanted: dict[type[models.Model], tuple[str, Collection]],
) -> dict[type[models.Model], dict[Any, Any]]:
    """For each model, `{value: pk}` of its rows whose field (the pair's name: "pk", or a
    unique field such as "slug") holds one of the values; rows that do not exist are absent.
    On PostgreSQL the rows are locked FOR KEY SHARE until the transaction ends, every model in
    one statement: a concurrent delete waits for the caller to commit."""
    return insert_then_lock_rows(None, wanted)[1]


def insert_then_lock_rows(
    insert: tuple[str, Sequence] | None,
    wanted: dict[type[models.Model], tuple[str, Collection]],
) -> tuple[list, dict[type[models.Model], dict[Any, Any]]]:
    """Run `insert` (SQL of an INSERT returning one column, and its parameters), then
    `lock_rows(wanted)`: (the values the INSERT returned, `lock_rows`' answer). On PostgreSQL
    both are one statement, one round trip: the ingest of every batch starts with them."""
    targets = tuple((model, name) for model, (name, _) in wanted.items())
    values = [sorted(wanted[model][1]) for model, _ in targets]
    if connection.vendor != "postgresql":
        returned = []
        if insert is not None:
            with connection.cursor() as cursor:
                cursor.execute(*insert)
                returned = [row[0] for row in cursor.fetchall()]
        return returned, {
            model: dict(
                model._base_manager.filter(**{f"{name}__in": vals})
                .order_by()
                .values_list(name, "pk")
            )
            for (model, name), vals in zip(targets, values, strict=True)
        }
    sql = _lock_statement(targets, None if insert is None else insert[0])
    with connection.cursor() as cursor:
        cursor.execute(sql, [*(insert[1] if insert else ()), *values])
        rows = cursor.fetchall()
    returned = []
    found: dict[type[models.Model], dict[Any, Any]] = {model: {} for model, _ in targets}
    for i, pk, value in rows:
        if i < 0:
            returned.append(pk)
            continue
        model, name = targets[i]
        found[model][pk if name == "pk" else value] = pk
    return returned, found


@functools.cache
def _lock_statement(
    targets: tuple[tuple[type[models.Model], str], ...], insert: str | None = None
) -> str:
    """One statement that locks the rows of each (model, field) whose field is one of a list
    FOR KEY SHARE and returns (the target's position, pk, the field as text or null for pk);
    with `insert` (returning one column) first, its rows as (-1, the value, null)."""
    quote = connection.ops.quote_name
    ctes, selects = [], []
    if insert is not None:
        ctes.append(f"inserted AS ({insert})")
        selects.append("SELECT -1, *, NULL::text FROM inserted")
    for i, (model, name) in enumerate(targets):
        pk = quote(model._meta.pk.column)
        column = pk if name == "pk" else quote(model._meta.get_field(name).column)
        table = quote(model._meta.db_table)
        ctes.append(
            f"k{i} AS (SELECT {pk} AS pk, {column} AS value FROM {table}"
            f" WHERE {column} = ANY(%s) FOR KEY SHARE)"
        )
        value = "NULL::text" if name == "pk" else "value::text"
        selects.append(f"SELECT {i}, pk, {value} FROM k{i}")
    return f"WITH {', '.join(ctes)} {' UNION ALL '.join(selects)}"


def bulk_insert(model: type[models.Model], fields: Sequence[str], rows: Sequence[tuple]) -> str:
    """Insert `rows` (tuples of values for `fields`, attnames such as `host_id`), after
    checking the keys the database does not (`check_keys_of`).

    Returns the method used ("copy" or "bulk_create"), so callers and tests can tell.
    """
    return bulk_insert_all([(model, fields, rows)])


def bulk_insert_all(tables: Sequence[Table], *, keys_locked: bool = False) -> str:
    """`bulk_insert` of several tables' rows, their keys checked together first
    (`check_keys_of`): a batch that names a deleted row stores nothing in any table.
    `keys_locked`: the caller already holds every key the rows name (`lock_rows`)."""
    tables = [t for t in tables if t[2]]
    if not tables:
        return "none"
    if not keys_locked:
        check_keys_of(tables)
    if connection.vendor == "postgresql":
        for model, fields, rows in tables:
            _copy(model, fields, rows)
        return "copy"
    for model, fields, rows in tables:
        model.objects.bulk_create(
            [model(**dict(zip(fields, row, strict=True))) for row in rows],
            batch_size=FALLBACK_BATCH_SIZE,
        )
    return "bulk_create"


def _copy(model: type[models.Model], fields: Sequence[str], rows: Sequence[tuple]) -> None:
    sql, types = _copy_statement(model, tuple(fields))
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.cursor.copy(sql) as copy,
    ):
        copy.set_types(types)
        write_row = copy.write_row
        for row in rows:
            write_row(row)


@functools.cache
def _copy_statement(model: type[models.Model], fields: tuple[str, ...]) -> tuple[str, list[str]]:
    """(COPY ... FROM STDIN (FORMAT BINARY), the columns' type names), once a process."""
    meta = model._meta
    by_attname = {f.attname: f for f in meta.concrete_fields}
    columns = [by_attname[name].column for name in fields]
    # "varchar(100)" -> "varchar": psycopg knows types by name, without modifiers.
    types = [re.sub(r"\(.*\)$", "", by_attname[name].db_type(connection)) for name in fields]
    quote = connection.ops.quote_name
    sql = "COPY {} ({}) FROM STDIN (FORMAT BINARY){}".format(
        quote(meta.db_table), ", ".join(quote(c) for c in columns), _row_at_a_time()
    )
    return sql, types


# PostgreSQL rewrote its resource owners in 17; before that, see `_row_at_a_time`.
SLOT_BOOKKEEPING_FIXED = 170000


def _row_at_a_time() -> str:
    """A clause that makes COPY insert row by row, on the PostgreSQL releases where that is
    cheaper for a batch's thousand rows (docs/ingest-speed.md, stop 36).

    COPY buffers up to 1,000 rows before writing them, each in a tuple slot of its own, and
    before 17 every slot's pin of the row type is remembered in the statement's resource owner,
    a hash table in which these identical entries share one probe chain: a fifth of a backend's
    CPU at 1,000 rows a statement. PostgreSQL does not buffer when the COPY's WHERE clause is
    volatile (it might read the table being filled: `CopyFrom`), and then uses one slot.
    `random() >= 0` is volatile and always true (random() is in [0, 1)), so every row is
    stored, one at a time."""
    if connection.vendor != "postgresql" or connection.pg_version >= SLOT_BOOKKEEPING_FIXED:
        return ""
    return " WHERE random() >= 0"


def insert_instances(model: type[models.Model], objs: Sequence[models.Model]) -> str:
    """Insert unsaved instances of `model` (their primary keys are not read back): COPY on
    PostgreSQL, `bulk_create` in batches elsewhere. The database checks their constraints as
    an INSERT's. Returns the method used ("copy", "bulk_create" or "none")."""
    if not objs:
        return "none"
    if connection.vendor != "postgresql":
        model.objects.bulk_create(objs, batch_size=FALLBACK_BATCH_SIZE)
        return "bulk_create"
    fields = _insertable_fields(model)
    db = connections[DEFAULT_DB_ALIAS]  # once: `connection` is a proxy, looked up per use
    with (
        connection.wrap_database_errors,  # IntegrityError etc., as an INSERT would raise
        connection.cursor() as cursor,
        cursor.cursor.copy(_copy_text_statement(model)) as copy,
    ):
        # Text COPY adapts each value by its Python type (Django's Jsonb wrapper, bytes,
        # aware datetimes), as the INSERT's parameters would be.
        write_row = copy.write_row
        for obj in objs:
            write_row([f.get_db_prep_save(f.pre_save(obj, True), db) for f in fields])
    return "copy"


@functools.cache
def _insertable_fields(model: type[models.Model]) -> list[models.Field]:
    return [f for f in model._meta.concrete_fields if not f.primary_key or not f.db_returning]


@functools.cache
def _copy_text_statement(model: type[models.Model]) -> str:
    quote = connection.ops.quote_name
    columns = ", ".join(quote(f.column) for f in _insertable_fields(model))
    return f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN"
