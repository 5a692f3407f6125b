"""A plan's options from a query string: one DRF serializer for the page and the API.

`slo` (repeatable, or comma-separated `ttft_p99_ms=500`), `load` (req/s) or `growth` (a factor
on the live peak), `headroom` (0 to below 1), `at_concurrency` or `at_rate`, `sweep` (a run id:
plan from the sweep that holds it). Errors name the field; `plan_inputs` turns the valid data
into keyword arguments of `planning.plan.plan_for`.
"""

from __future__ import annotations

import math

from rest_framework import serializers

from core.validators import MAX_ID
from planning.objectives import ObjectiveError, parse_objectives


class PlanInputError(ValueError):
    """A field that cannot be read; the message names it."""


def _positive(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise serializers.ValidationError("must be a positive number")
    return value


class PlanQuerySerializer(serializers.Serializer):
    slo = serializers.ListField(
        child=serializers.CharField(max_length=500, allow_blank=True), required=False
    )
    load = serializers.FloatField(required=False, validators=[_positive])
    growth = serializers.FloatField(required=False, validators=[_positive])
    headroom = serializers.FloatField(required=False, min_value=0)
    at_concurrency = serializers.FloatField(required=False, validators=[_positive])
    at_rate = serializers.FloatField(required=False, validators=[_positive])
    sweep = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)

    def validate_headroom(self, value: float) -> float:
        if not value < 1:
            raise serializers.ValidationError("must be below 1 (a share of each replica)")
        return value

    def validate_slo(self, value: list[str]) -> list:
        texts = [v for v in value if v.strip()]
        try:
            return parse_objectives(texts) if texts else None
        except ObjectiveError as exc:
            raise serializers.ValidationError(str(exc)) from None

    def validate(self, data: dict) -> dict:
        if data.get("load") is not None and data.get("growth") is not None:
            raise serializers.ValidationError(
                {"growth": "give a load, or a growth of the live peak, not both"}
            )
        if data.get("at_concurrency") is not None and data.get("at_rate") is not None:
            raise serializers.ValidationError({"at_rate": "give at_concurrency or at_rate"})
        return data


def _blank_to_missing(data) -> dict:
    """Empty form fields mean "not given" (a GET form sends every field)."""
    out = {k: v for k, v in data.items() if k != "slo" and str(v).strip()}
    getlist = getattr(data, "getlist", None)
    slos = getlist("slo") if getlist else ([data["slo"]] if data.get("slo") else [])
    if slos:
        out["slo"] = slos
    return out


def plan_inputs(data) -> dict:
    """Keyword arguments of plan_for from a query dict; PlanInputError naming the field."""
    query = PlanQuerySerializer(data=_blank_to_missing(data))
    if not query.is_valid():
        field, messages = next(iter(query.errors.items()))
        raise PlanInputError(f"{field}: {' '.join(str(m) for m in messages)}")
    v = query.validated_data
    return {
        "objectives": v.get("slo"),
        "load": v.get("load"),
        "growth": v.get("growth") or 1.0,
        "spare": v.get("headroom"),
        "at_concurrency": v.get("at_concurrency"),
        "at_rate": v.get("at_rate"),
        "sweep_of": v.get("sweep"),
    }
