"""Validation of what agents send (docs/contracts.md) and of metrics queries.

Everything from outside is checked here, with errors naming the field path
(`requests[3].e2e_ms`, `scrapes[0].exposition` plus the bad line). Exposition text is parsed
at validation time so a malformed scrape rejects the whole batch; the parsed result rides along
in `validated_data` so the ingest service does not parse it twice. What to store, and how, is
`services.ingest`'s business.
"""

from __future__ import annotations

import math
import re
import uuid
from datetime import UTC, datetime, timedelta

from django.conf import settings
from django.utils import timezone
from rest_framework import exceptions, serializers

from analysis import plausibility
from collectors import exposition
from collectors.exposition.engines import EXPORTERS
from collectors.models import Host
from collectors.samples import ValidRequest
from core.api import Rfc3339Field, flatten_errors

# re-exported: callers flatten errors the way the API does
__all__ = ["ValidRequest", "flatten_errors"]

# Control characters (C0, DEL, C1) have no place in names, slugs or ids.
CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# The earliest timestamp a metrics query may name: no date arithmetic on it leaves datetime's range.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)


def acceptance_window(now: datetime) -> tuple[datetime, datetime]:
    """The ingest acceptance window around `now` (PERFHUB_INGEST_MAX_AGE_S / _AHEAD_S)."""
    return (
        now - timedelta(seconds=settings.PERFHUB_INGEST_MAX_AGE_S),
        now + timedelta(seconds=settings.PERFHUB_INGEST_MAX_AHEAD_S),
    )


def _span(seconds: int) -> str:
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            n = seconds // size
            return f"{n} {unit}{'s' if n != 1 else ''}"
    return f"{seconds} seconds"


def _z(ts: datetime) -> str:
    return ts.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


class BoundedRfc3339Field(Rfc3339Field):
    """`core.api.Rfc3339Field` bounded in time.

    `window=True` (ingest): it must fall inside the acceptance window around the context's
    `now`. Otherwise (metrics queries) it must lie between 1970 and the window's end.
    """

    default_error_messages = {
        "window": (
            "{value} is outside the acceptance window {start} .. {end} (now - {age} .. "
            "now + {ahead}); check the host's clock."
        ),
        "range": "The timestamp must lie between 1970 and now + {ahead}.",
    }

    def __init__(self, *, window: bool = False, **kwargs) -> None:
        self.window = window
        super().__init__(**kwargs)

    def check(self, value: datetime, data: str) -> None:
        if self.window:
            start, end = acceptance_window(self.context_now())
            if not start <= value <= end:
                self.fail(
                    "window",
                    value=data,
                    start=_z(start),
                    end=_z(end),
                    age=_span(settings.PERFHUB_INGEST_MAX_AGE_S),
                    ahead=_span(settings.PERFHUB_INGEST_MAX_AHEAD_S),
                )
        elif not EARLIEST <= value <= acceptance_window(self.context_now())[1]:
            self.fail("range", ahead=_span(settings.PERFHUB_INGEST_MAX_AHEAD_S))

    def context_now(self) -> datetime:
        root = self.root
        now = root.context.get("now") if root is not None else None
        return now or timezone.now()


class StrictCharField(serializers.CharField):
    """A JSON string (a number or boolean is refused, not coerced), kept as sent (no trimming),
    without control characters unless `allow_control` (exposition text has newlines)."""

    default_error_messages = {
        "not_a_string": "A string is required.",
        "control": "Control characters are not allowed.",
    }

    def __init__(self, *, allow_control: bool = False, **kwargs) -> None:
        self.allow_control = allow_control
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)

    def to_internal_value(self, data) -> str:
        if not isinstance(data, str):
            self.fail("not_a_string")
        if not self.allow_control and CONTROL_CHARACTERS.search(data):
            self.fail("control")
        return super().to_internal_value(data)


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer: not a string, a boolean or a number with a fraction."""

    default_error_messages = {"invalid": "A whole number is required."}

    def to_internal_value(self, data) -> int:
        if type(data) is not int:
            self.fail("invalid")
        return super().to_internal_value(data)


class StrictBooleanField(serializers.BooleanField):
    """A JSON boolean: `true` or `false`, not "yes", 1 or "true"."""

    default_error_messages = {"invalid": "A JSON boolean (true or false) is required."}

    def to_internal_value(self, data) -> bool:
        if not isinstance(data, bool):
            self.fail("invalid")
        return data


class StrictUUIDField(serializers.UUIDField):
    """A UUID as a JSON string (a number is refused, not turned into a made-up UUID)."""

    def to_internal_value(self, data) -> uuid.UUID:
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return super().to_internal_value(data)


class StrictFloatField(serializers.FloatField):
    """A JSON number (not a string or a boolean), finite, optionally bounded."""

    default_error_messages = {
        "invalid": "A number is required.",
        "not_finite": "A finite number is required (not NaN or Infinity).",
    }

    def to_internal_value(self, data) -> float:
        if isinstance(data, bool) or not isinstance(data, int | float):
            self.fail("invalid")
        try:
            value = float(data)
        except OverflowError:  # a JSON integer past a double's range (10**400): not a 500
            self.fail("not_finite")
        if not math.isfinite(value):
            self.fail("not_finite")
        return value


def ratio(**kwargs) -> StrictFloatField:
    return StrictFloatField(min_value=0.0, max_value=1.0, allow_null=True, required=False, **kwargs)


def non_negative(**kwargs) -> StrictFloatField:
    kwargs.setdefault("allow_null", True)
    kwargs.setdefault("required", False)
    return StrictFloatField(min_value=0.0, **kwargs)


def within(rng: plausibility.Range, *, integer: bool = False, **kwargs) -> serializers.Field:
    """A strict number in the physical range `rng` (analysis.plausibility): the error says
    the range and why, e.g. "1e+308 is outside 0..5000 W (a GPU draws at most a few kW)"."""
    kwargs.setdefault("allow_null", True)
    kwargs.setdefault("required", False)

    def plausible(value: float) -> None:
        if why := rng.problem(value):
            raise serializers.ValidationError(why)

    field = StrictIntegerField if integer else StrictFloatField
    return field(validators=[plausible], **kwargs)


def count(**kwargs) -> serializers.IntegerField:
    kwargs.setdefault("allow_null", True)
    kwargs.setdefault("required", False)
    return StrictIntegerField(min_value=0, max_value=2**62, **kwargs)


class GpuSampleSerializer(serializers.Serializer):
    ts = BoundedRfc3339Field(window=True)
    index = StrictIntegerField(min_value=0, max_value=1023)
    uuid = StrictCharField(max_length=100, allow_blank=True, required=False, default="")
    name = StrictCharField(max_length=100, allow_blank=True, required=False, default="")
    util = ratio()
    mem_util = ratio()
    mem_used_bytes = within(plausibility.GPU_MEMORY_BYTES, integer=True)
    mem_total_bytes = within(plausibility.GPU_MEMORY_BYTES, integer=True)
    power_w = within(plausibility.POWER_W)
    temp_c = within(plausibility.TEMPERATURE_C)
    sm_clock_mhz = within(plausibility.CLOCK_MHZ)
    sm_active = ratio()
    sm_occupancy = ratio()
    dram_active = ratio()

    def validate(self, attrs: dict) -> dict:
        used, total = attrs.get("mem_used_bytes"), attrs.get("mem_total_bytes")
        if used is not None and total is not None and used > total:
            raise serializers.ValidationError(
                {"mem_used_bytes": [f"{used} bytes used is above mem_total_bytes ({total})."]}
            )
        return attrs


class ScrapeSerializer(serializers.Serializer):
    ts = BoundedRfc3339Field(window=True)
    service = StrictCharField(
        max_length=50, allow_blank=True, allow_null=True, required=False, default=""
    )
    source = StrictCharField(min_length=1, max_length=20)
    exposition = StrictCharField(allow_blank=True, allow_control=True)

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


class RequestSampleSerializer(serializers.Serializer):
    """The contract for one request sample, and its error messages. Valid batches usually
    skip it: `collectors.decoding` checks the request list with msgspec first (the hot path)
    and comes here only to name what is wrong."""

    ts = BoundedRfc3339Field(window=True)
    service = StrictCharField(min_length=1, max_length=50)
    ttft_ms = within(plausibility.LATENCY_MS)
    tpot_ms = within(plausibility.LATENCY_MS)
    e2e_ms = within(plausibility.LATENCY_MS, allow_null=False, required=True)
    queue_ms = within(plausibility.LATENCY_MS)
    prompt_tokens = within(plausibility.TOKENS, integer=True)
    output_tokens = within(plausibility.TOKENS, integer=True)
    ok = StrictBooleanField(required=False, default=True)

    def to_internal_value(self, data) -> ValidRequest:
        attrs = super().to_internal_value(data)
        if why := plausibility.ttft_problem(attrs.get("ttft_ms"), attrs["e2e_ms"]):
            raise serializers.ValidationError({"ttft_ms": [why]})
        return ValidRequest(
            service=attrs["service"], ts=attrs["ts"], ttft_ms=attrs.get("ttft_ms"),
            tpot_ms=attrs.get("tpot_ms"), e2e_ms=attrs["e2e_ms"], queue_ms=attrs.get("queue_ms"),
            prompt_tokens=attrs.get("prompt_tokens"), output_tokens=attrs.get("output_tokens"),
            ok=attrs["ok"],
        )  # fmt: skip


class IngestEnvelopeSerializer(serializers.Serializer):
    """A batch's own fields and its scrapes; `collectors.decoding`'s hot path adds the GPU
    samples and requests it validated. Context: `host` (the token's host), optionally `now`."""

    batch_id = StrictUUIDField()
    host = StrictCharField(min_length=1, max_length=200)
    agent_version = StrictCharField(max_length=40, allow_blank=True, required=False, default="")
    sent_at = BoundedRfc3339Field(window=True)
    scrapes = ScrapeSerializer(many=True, required=False, default=list)

    def validate_host(self, value: str) -> str:
        host: Host = self.context["host"]
        if value != host.name:
            # Not a field error: the credentials do not cover this host.
            raise exceptions.PermissionDenied(
                f"This token belongs to host {host.name!r}, not {value!r}."
            )
        return value

    # Whether the named services exist is checked where the batch is stored, under the lock
    # that keeps them until it commits (`collectors.services.ingest._insert_batch_and_lock_keys`).


class IngestBatchSerializer(IngestEnvelopeSerializer):
    """The agent's push (v1), every field through DRF: the contract (and the schema), and the
    path that names what is wrong in a batch the hot path refused."""

    gpus = GpuSampleSerializer(many=True, required=False, default=list)
    requests = RequestSampleSerializer(many=True, required=False, default=list)


class IngestAcceptedSerializer(serializers.Serializer):
    """The 202 answer (for the schema)."""

    batch_id = serializers.UUIDField()
    counts = serializers.DictField(child=serializers.IntegerField())
    warnings = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Present when something stored is likely not what was meant: a scrape none "
        "of whose samples PerfHub reads for its source.",
    )


class IngestDuplicateSerializer(serializers.Serializer):
    """The 200 answer to a replayed batch (for the schema)."""

    duplicate = serializers.BooleanField()


class MetricsQuerySerializer(serializers.Serializer):
    """`?start=&end=&hosts=&resolution=` for the metrics API. Default: the last hour."""

    MAX_RANGE = timedelta(days=400)

    start = BoundedRfc3339Field(required=False)
    end = BoundedRfc3339Field(required=False)
    hosts = StrictCharField(required=False, allow_blank=True, max_length=2000)
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
