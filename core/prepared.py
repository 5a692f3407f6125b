"""One row and its parent row by one column, in SQL built once a process.

The ORM compiles a query every time it runs it: on the bench machine about 1 ms of CPU for
the token lookup every API call makes, most of what that lookup costs. A hot lookup that
always runs the same statement builds it here once, from the models' own metadata, and makes
the instances with `Model.from_db`, as the ORM does. Only for models whose columns need no
conversion from their database values (checked when the statement is built; the ORM is
used otherwise, so a field added later cannot come back wrong).
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

from django.db import connections, router
from django.db.models import Model

M = TypeVar("M", bound=Model)


def get_with_parent(
    model: type[M], parent: str, where: str, value: Any, *, null: tuple[str, ...] = ()
) -> M | None:
    """The `model` row whose `where` column equals `value` (a unique column) and whose `null`
    fields are NULL, with its `parent` (a non-null foreign key) loaded, as
    `model.objects.select_related(parent).get(...)` would give it; None when there is none."""
    alias = router.db_for_read(model)
    connection = connections[alias]
    statement = _statement(model, parent, where, null, alias)
    if statement is None:
        lookup = {where: value, **{f"{name}__isnull": True for name in null}}
        return model.objects.using(alias).select_related(parent).filter(**lookup).first()
    sql, child_names, parent_model, parent_names = statement
    with connection.cursor() as cursor:
        cursor.execute(sql, [value])
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(child_names)
    child = model.from_db(alias, child_names, row[:split])
    related = parent_model.from_db(alias, parent_names, row[split:])
    model._meta.get_field(parent).set_cached_value(child, related)
    return child


@functools.cache
def _statement(
    model: type[Model], parent: str, where: str, null: tuple[str, ...], alias: str
) -> tuple[str, list[str], type[Model], list[str]] | None:
    connection = connections[alias]
    key = model._meta.get_field(parent)
    parent_model = key.related_model
    child_fields = model._meta.concrete_fields
    parent_fields = parent_model._meta.concrete_fields
    for field in (*child_fields, *parent_fields):
        if field.get_db_converters(connection) or connection.ops.get_db_converters(
            field.get_col(field.model._meta.db_table)
        ):
            return None
    quote = connection.ops.quote_name
    child_table, parent_table = quote(model._meta.db_table), quote(parent_model._meta.db_table)
    columns = [f"{child_table}.{quote(f.column)}" for f in child_fields]
    columns += [f"{parent_table}.{quote(f.column)}" for f in parent_fields]
    conditions = [f"{child_table}.{quote(model._meta.get_field(where).column)} = %s"]
    conditions += [f"{child_table}.{quote(model._meta.get_field(n).column)} IS NULL" for n in null]
    sql = "SELECT {} FROM {} INNER JOIN {} ON {}.{} = {}.{} WHERE {}".format(
        ", ".join(columns), child_table, parent_table, parent_table,
        quote(key.target_field.column), child_table, quote(key.column), " AND ".join(conditions),
    )  # fmt: skip
    return (
        sql,
        [f.attname for f in child_fields],
        parent_model,
        [f.attname for f in parent_fields],
    )
