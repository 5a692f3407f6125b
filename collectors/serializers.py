"""Validation of what agents send (DESIGN.md section 3) and of metrics queries.

Everything from outside is checked here, with errors naming the field path
(`requests[3].e2e_ms`, `scrapes[0].exposition` plus the bad line). Exposition text is parsed
at validation time so a malformed scrape rejects the whole batch; the parsed result rides along
in `validated_data` so the ingest service does not parse it twice. What to store, and how, is
`services.ingest`'s business.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import exceptions, serializers

from collectors import exposition
from collectors.exposition.engines import EXPORTERS
from collectors.models import Host
from dossiers.models import Service

MAX_FUTURE = timedelta(minutes=5)


@extend_schema_field(OpenApiTypes.DATETIME)
class Rfc3339Field(serializers.Field):
    """An RFC 3339 timestamp with its offset, at most 5 minutes in the future."""

    default_error_messages = {
        "invalid": "An RFC 3339 timestamp is required, e.g. 2025-01-31T12:00:00Z.",
        "naive": "The timestamp needs a time zone offset (RFC 3339), e.g. Z or +00:00.",
        "future": "More than 5 minutes in the future ({value}); check the host's clock.",
    }

    def to_internal_value(self, data) -> datetime:
        if not isinstance(data, str) or "T" not in data.upper() or len(data) > 40:
            self.fail("invalid")
        try:
            value = datetime.fromisoformat(data)
        except ValueError:
            self.fail("invalid")
        if value.tzinfo is None:
            self.fail("naive")
        if value - self.context_now() > MAX_FUTURE:
            self.fail("future", value=data)
        return value

    def context_now(self) -> datetime:
        root = self.root
        now = root.context.get("now") if root is not None else None
        return now or timezone.now()

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


class StrictFloatField(serializers.FloatField):
    """A JSON number (not a string or a boolean), finite, optionally bounded."""

    default_error_messages = {
        "invalid": "A number is required.",
        "not_finite": "A finite number is required (not NaN or Infinity).",
    }

    def to_internal_value(self, data) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        value = float(data)
        if not math.isfinite(value):
            self.fail("not_finite")
        return value


def ratio(**kwargs) -> StrictFloatField:
    return StrictFloatField(min_value=0.0, max_value=1.0, allow_null=True, required=False, **kwargs)


def non_negative(**kwargs) -> StrictFloatField:
    kwargs.setdefault("allow_null", True)
    kwargs.setdefault("required", False)
    return StrictFloatField(min_value=0.0, **kwargs)


def count(**kwargs) -> serializers.IntegerField:
    kwargs.setdefault("allow_null", True)
    kwargs.setdefault("required", False)
    return serializers.IntegerField(min_value=0, max_value=2**62, **kwargs)


class GpuSampleSerializer(serializers.Serializer):
    ts = Rfc3339Field()
    index = serializers.IntegerField(min_value=0, max_value=1023)
    uuid = serializers.CharField(max_length=100, allow_blank=True, required=False, default="")
    name = serializers.CharField(max_length=100, allow_blank=True, required=False, default="")
    util = ratio()
    mem_util = ratio()
    mem_used_bytes = count()
    mem_total_bytes = count()
    power_w = non_negative()
    temp_c = StrictFloatField(allow_null=True, required=False, min_value=-100, max_value=250)
    sm_clock_mhz = non_negative()
    sm_active = ratio()
    sm_occupancy = ratio()
    dram_active = ratio()


class ScrapeSerializer(serializers.Serializer):
    ts = Rfc3339Field()
    service = serializers.CharField(
        max_length=50, allow_blank=True, allow_null=True, required=False, default=""
    )
    source = serializers.CharField(max_length=20)
    exposition = serializers.CharField(allow_blank=True, trim_whitespace=False)

    def validate_source(self, value: str) -> str:
        if value not in exposition.sources():
            known = ", ".join(exposition.sources())
            raise serializers.ValidationError(f'"{value}" is not a known source ({known}).')
        return value

    def validate(self, attrs: dict) -> dict:
        if attrs["source"] not in EXPORTERS and not attrs.get("service"):
            raise serializers.ValidationError(
                {"service": ["A service slug is required for an engine scrape."]}
            )
        try:
            attrs["parsed"] = exposition.parse(attrs["exposition"], attrs["source"])
        except exposition.ExpositionError as exc:
            where = f"line {exc.line}: " if exc.line is not None else ""
            detail = getattr(exc, "detail", None) or str(exc)
            raise serializers.ValidationError({"exposition": [f"{where}{detail}"]}) from exc
        return attrs


class FastPathListSerializer(serializers.ListSerializer):
    """A list whose items are first checked by the child's `fast_validate` (plain Python).

    Agents send thousands of requests a batch; DRF's per-field machinery costs ~60 us an item.
    The fast check accepts only what the full child serializer would accept unchanged; any item
    it is unsure of sends the whole list through DRF, which produces the exact error messages.
    """

    def to_internal_value(self, data):
        if isinstance(data, list) and data:
            fast = self.child.fast_validate
            now = self.child.fields["ts"].context_now()
            items = []
            for item in data:
                value = fast(item, now)
                if value is None:
                    break
                items.append(value)
            else:
                return items
        return super().to_internal_value(data)


def _fast_number(value, *, required: bool = False) -> bool:
    if value is None:
        return not required
    return (
        type(value) in (int, float)  # not bool, not str: DRF would coerce or refuse those
        and math.isfinite(value)
        and value >= 0
    )


def _fast_count(value) -> bool:
    return value is None or (type(value) is int and 0 <= value <= 2**62)


def _fast_ts(value, now: datetime) -> datetime | None:
    if type(value) is not str or "T" not in value.upper() or len(value) > 40:
        return None
    try:
        ts = datetime.fromisoformat(value)
    except ValueError:
        return None
    if ts.tzinfo is None or ts - now > MAX_FUTURE:
        return None
    return ts


class RequestSampleSerializer(serializers.Serializer):
    NUMBERS = ("ttft_ms", "tpot_ms", "queue_ms")
    COUNTS = ("prompt_tokens", "output_tokens")

    class Meta:
        list_serializer_class = FastPathListSerializer

    @classmethod
    def fast_validate(cls, item, now: datetime) -> dict | None:
        """The validated item, or None when only the full serializer can judge it."""
        if type(item) is not dict:
            return None
        ts = _fast_ts(item.get("ts"), now)
        service = item.get("service")
        ok = item.get("ok", True)
        if (
            ts is None
            or type(service) is not str
            or not 0 < len(service) <= 50
            or service != service.strip()
            or not _fast_number(item.get("e2e_ms"), required=True)
            or not all(_fast_number(item.get(k)) for k in cls.NUMBERS)
            or not all(_fast_count(item.get(k)) for k in cls.COUNTS)
            or type(ok) is not bool
        ):
            return None
        out = {"ts": ts, "service": service, "e2e_ms": float(item["e2e_ms"]), "ok": ok}
        for key in cls.NUMBERS:
            if key in item:
                out[key] = None if item[key] is None else float(item[key])
        for key in cls.COUNTS:
            if key in item:
                out[key] = item[key]
        return out

    ts = Rfc3339Field()
    service = serializers.CharField(max_length=50)
    ttft_ms = non_negative()
    tpot_ms = non_negative()
    e2e_ms = non_negative(allow_null=False, required=True)
    queue_ms = non_negative()
    prompt_tokens = count()
    output_tokens = count()
    ok = serializers.BooleanField(required=False, default=True)


class IngestBatchSerializer(serializers.Serializer):
    """The agent's push (v1). Context: `host` (the token's host), optionally `now`."""

    batch_id = serializers.UUIDField()
    host = serializers.CharField(max_length=200)
    agent_version = serializers.CharField(
        max_length=40, allow_blank=True, required=False, default=""
    )
    sent_at = Rfc3339Field()
    gpus = GpuSampleSerializer(many=True, required=False, default=list)
    scrapes = ScrapeSerializer(many=True, required=False, default=list)
    requests = RequestSampleSerializer(many=True, required=False, default=list)

    def validate_host(self, value: str) -> str:
        host: Host = self.context["host"]
        if value != host.name:
            # Not a field error: the credentials do not cover this host.
            raise exceptions.PermissionDenied(
                f"This token belongs to host {host.name!r}, not {value!r}."
            )
        return value

    def validate(self, attrs: dict) -> dict:
        slugs = {s["service"] for s in attrs["scrapes"] if s.get("service")}
        slugs |= {r["service"] for r in attrs["requests"]}
        services = {s.slug: s for s in Service.objects.filter(slug__in=slugs)} if slugs else {}
        errors: dict[str, list[str]] = {}
        for name in ("scrapes", "requests"):
            for i, item in enumerate(attrs[name]):
                slug = item.get("service")
                if slug and slug not in services and f"{name}[{i}].service" not in errors:
                    errors[f"{name}[{i}].service"] = [f"Unknown service {slug!r}."]
        if errors:
            raise serializers.ValidationError(errors)
        attrs["services"] = services
        return attrs


class IngestAcceptedSerializer(serializers.Serializer):
    """The 202 answer (for the schema)."""

    batch_id = serializers.UUIDField()
    counts = serializers.DictField(child=serializers.IntegerField())


class IngestDuplicateSerializer(serializers.Serializer):
    """The 200 answer to a replayed batch (for the schema)."""

    duplicate = serializers.BooleanField()


def flatten_errors(detail, path: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as `{"requests[3].e2e_ms": ["..."]}`: one key per bad field path."""
    flat: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int):  # a list's errors by index
                child = f"{path}[{key}]"
            elif key == "non_field_errors" and path:
                child = path
            elif not path:
                child = f"{path}{key}"
            else:
                child = f"{path}.{key}"
            flat.update(flatten_errors(value, child))
    elif isinstance(detail, list) and any(isinstance(v, dict | list) for v in detail):
        for i, value in enumerate(detail):
            if value:
                flat.update(flatten_errors(value, f"{path}[{i}]"))
    elif isinstance(detail, list):
        flat.setdefault(path or "non_field_errors", []).extend(str(v) for v in detail)
    else:
        flat.setdefault(path or "non_field_errors", []).append(str(detail))
    return flat


class MetricsQuerySerializer(serializers.Serializer):
    """`?start=&end=&hosts=&resolution=` for the metrics API. Default: the last hour."""

    MAX_RANGE = timedelta(days=400)

    start = Rfc3339Field(required=False)
    end = Rfc3339Field(required=False)
    hosts = serializers.CharField(required=False, allow_blank=True, max_length=2000)
    resolution = serializers.ChoiceField(choices=[60, 300, 3600], required=False)

    def validate(self, attrs: dict) -> dict:
        end = attrs.get("end") or timezone.now()
        start = attrs.get("start") or end - timedelta(hours=1)
        if start >= end:
            raise serializers.ValidationError({"start": ["Must be before end."]})
        if end - start > self.MAX_RANGE:
            raise serializers.ValidationError({"start": ["The range is limited to 400 days."]})
        hosts = [h.strip() for h in attrs.get("hosts", "").split(",") if h.strip()]
        return {"start": start, "end": end, "hosts": hosts or None, **_resolution(attrs)}


def _resolution(attrs: dict) -> dict:
    return {"resolution": attrs["resolution"]} if attrs.get("resolution") else {}
