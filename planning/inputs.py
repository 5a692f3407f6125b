"""Reading a plan's options from a query string (the page and the API share it)."""

from __future__ import annotations

import math

from planning.objectives import ObjectiveError, parse_objectives


class PlanInputError(ValueError):
    """A field that cannot be read; the message names it."""


def _number(data, name: str) -> float | None:
    raw = (data.get(name) or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise PlanInputError(f"{name}: {raw[:40]!r} is not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise PlanInputError(f"{name}: must be a positive number")
    return value


def plan_inputs(data) -> dict:
    """`slo` (repeatable, or comma-separated `ttft_p99_ms=500`), `load` (req/s), `growth`,
    `headroom` (0-1), `at_concurrency` / `at_rate` -> keyword arguments of plan_for."""
    slos = [
        s for s in (data.getlist("slo") if hasattr(data, "getlist") else [data.get("slo")]) if s
    ]
    try:
        objectives = parse_objectives(slos) if slos else None
    except ObjectiveError as exc:
        raise PlanInputError(str(exc)) from None
    at_concurrency, at_rate = _number(data, "at_concurrency"), _number(data, "at_rate")
    if at_concurrency is not None and at_rate is not None:
        raise PlanInputError("at_concurrency, at_rate: give one of them, not both")
    raw_headroom = (data.get("headroom") or "").strip()
    spare = None
    if raw_headroom:
        try:
            spare = float(raw_headroom)
        except ValueError:
            raise PlanInputError(f"headroom: {raw_headroom[:40]!r} is not a number") from None
        if not 0 <= spare < 1:
            raise PlanInputError("headroom: must be at least 0 and below 1")
    load = _number(data, "load")
    growth = _number(data, "growth")
    if load is not None and growth is not None:
        raise PlanInputError("load, growth: give a load, or a growth of the live peak, not both")
    return {
        "objectives": objectives,
        "load": load,
        "growth": growth or 1.0,
        "spare": spare,
        "at_concurrency": at_concurrency,
        "at_rate": at_rate,
    }
