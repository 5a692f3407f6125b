"""A dossier's YAML values -> what the model fields store, strictly typed; errors name the line."""

from __future__ import annotations

import contextlib
import datetime as dt
import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import models

from analysis import plausibility
from dossiers.markdown import schema
from dossiers.markdown.grammar import DossierFormatError, LineDict
from dossiers.models import Service


def check_keys(data: LineDict, allowed: set[str], where: str) -> None:
    for key in data:
        if key not in allowed:
            raise DossierFormatError(
                f"line {data.lines[key]}: {where}: unknown field '{key}' "
                f"(expected one of {', '.join(sorted(allowed))})."
            )


def value(model: type[models.Model], key: schema.Key, raw: Any, where: str, line: int) -> Any:
    """A YAML value -> what the model field stores, strictly typed; errors name the line."""
    model_field = model._meta.get_field(key.field)
    kind = model_field.get_internal_type()

    def fail(expected: str) -> DossierFormatError:
        return DossierFormatError(
            f"line {line}: {where}: {key.key}: expected {expected}, got {raw!r}."
        )

    if raw is None:
        if kind in {"CharField", "TextField", "URLField"}:
            return ""
        return model_field.get_default() if not model_field.null else None
    number = isinstance(raw, int | float) and not isinstance(raw, bool) and math.isfinite(raw)
    if key.scale in {"gb", "pct"}:
        if not number:
            raise fail("a number")
        exact = Decimal(repr(raw))
        if key.scale == "gb":
            return int((exact * 10**9).to_integral_value())
        return float(exact / 100)
    if kind in {"CharField", "TextField", "URLField"}:
        if not isinstance(raw, str):
            raise fail("text (quote it)")
        if model_field.choices and raw not in {c for c, _ in model_field.choices}:
            raise fail("one of " + ", ".join(c for c, _ in model_field.choices))
        return raw
    if kind == "FloatField":
        if not number:
            raise fail("a number")
        return float(raw)
    if kind in {"PositiveIntegerField", "IntegerField", "BigIntegerField"}:
        if not isinstance(raw, int) or isinstance(raw, bool):
            raise fail("a whole number")
        return raw
    if kind == "DecimalField":
        if not number:
            raise fail("a number")
        try:
            return Decimal(repr(raw))
        except InvalidOperation:
            raise fail("a number") from None
    if kind == "DateTimeField":
        return datetime(raw, fail)
    if kind == "DateField":
        value = raw
        if isinstance(raw, str):
            with contextlib.suppress(ValueError):
                value = dt.date.fromisoformat(raw)
        is_date = isinstance(value, dt.date) and not isinstance(value, dt.datetime)
        if is_date and YEARS[0] <= value.year <= YEARS[1]:
            return value
        raise fail(f"a date like 2026-03-01, between {YEARS[0]} and {YEARS[1]}")
    if kind == "JSONField":
        if not isinstance(raw, dict):
            raise fail("a mapping")
        return raw
    raise fail(kind)  # pragma: no cover - every mapped field kind is handled above


# Dates outside these years are typing mistakes, and year 1 in a zone east of UTC does not
# even convert to UTC.
YEARS = (1990, 2100)


def datetime(raw: Any, fail) -> dt.datetime:
    value = raw
    if isinstance(raw, str):
        try:
            value = dt.datetime.fromisoformat(raw)
        except ValueError:
            raise fail("a date and time like 2026-03-01 12:00:00+00:00") from None
    if not isinstance(value, dt.datetime):
        raise fail("a date and time like 2026-03-01 12:00:00+00:00")
    if value.tzinfo is None:
        raise fail("a time zone (e.g. +00:00)")
    if not YEARS[0] <= value.year <= YEARS[1]:
        raise fail(f"a time between {YEARS[0]} and {YEARS[1]}")
    return value.astimezone(dt.UTC)


def fields(
    model: type[models.Model], data: LineDict, keys: tuple[schema.Key, ...], where: str
) -> dict[str, Any]:
    return {
        key.field: value(model, key, data[key.key], where, data.lines[key.key])
        for key in keys
        if key.key in data
    }


def service_fields(data: LineDict, keys: tuple[schema.Key, ...], where: str) -> dict[str, Any]:
    check_keys(data, {k.key for k in keys}, where)
    parsed: dict[str, Any] = {}
    for key in keys:
        model_field = Service._meta.get_field(key.field)
        if key.key in data:
            parsed[key.field] = value(Service, key, data[key.key], where, data.lines[key.key])
        elif model_field.null:
            parsed[key.field] = None
        elif model_field.has_default():
            parsed[key.field] = model_field.get_default()
        else:
            parsed[key.field] = ""  # blank, or refused by the model's validation on apply
    for name, why in plausibility.field_problems(parsed, plausibility.SERVICE_FIELD_RANGES):
        key = next(k for k in keys if k.field == name)
        raise DossierFormatError(f"line {data.lines[key.key]}: {where}: {key.key}: {why}")
    return parsed


def flag(data: LineDict, key: str, where: str) -> bool:
    value = data.get(key, False)
    if not isinstance(value, bool):
        raise DossierFormatError(
            f"line {data.lines[key]}: {where}: {key}: expected true or false, got {value!r}."
        )
    return value


def text(data: LineDict, key: str, where: str) -> str:
    value = data.get(key, "")
    if not isinstance(value, str):
        raise DossierFormatError(
            f"line {data.lines[key]}: {where}: {key}: expected text (quote it), got {value!r}."
        )
    return value
