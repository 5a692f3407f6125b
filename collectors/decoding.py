"""From an ingest body (bytes) to `IngestBatchSerializer.validated_data`, fast when it is valid.

Agents send a thousand request samples a batch; DRF's per-field machinery costs ~20 us a sample,
more than the database spends storing it. So the request and GPU lists are first decoded and
checked by msgspec (compiled: decoding and type checks in one pass, ~1 us a sample), under rules
that accept only what `RequestSampleSerializer` / `GpuSampleSerializer` accept unchanged: JSON
numbers for numbers, JSON booleans for booleans, the same bounds, timestamps through the same
`parse_rfc3339` and acceptance window, no control characters in names. The batch's own fields
and its scrapes (exposition text, parsed anyway) go through DRF (`IngestEnvelopeSerializer`).
When msgspec refuses anything, the whole body goes through `IngestBatchSerializer` instead,
which names the bad field (`requests[3].e2e_ms`): msgspec never words an error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from analysis import plausibility
from collectors.models import Host
from collectors.serializers import (
    CONTROL_CHARACTERS,
    IngestBatchSerializer,
    IngestEnvelopeSerializer,
    ValidRequest,
    acceptance_window,
    parse_rfc3339,
)
from core.api import check_depth, check_raw_depth, flatten_errors, loads_limited


def _within(rng: plausibility.Range, kind: type = float) -> Any:
    """msgspec's bounds for a range of analysis.plausibility (the DRF path names the field)."""
    return Annotated[kind, msgspec.Meta(ge=rng.low, le=rng.high)]


# Finite and physically possible (JSON has no NaN; the bounds keep roll-up sums finite).
Latency = _within(plausibility.LATENCY_MS)
Tokens = _within(plausibility.TOKENS, int)
Ratio = _within(plausibility.RATIO)
GpuBytes = _within(plausibility.GPU_MEMORY_BYTES, int)
Name = Annotated[str, msgspec.Meta(max_length=100)]
UNSET: Any = msgspec.UNSET


class _Request(msgspec.Struct):
    ts: str
    service: Annotated[str, msgspec.Meta(min_length=1, max_length=50)]
    e2e_ms: Latency
    ttft_ms: Latency | None = None
    tpot_ms: Latency | None = None
    queue_ms: Latency | None = None
    prompt_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    ok: bool = True


class _Gpu(msgspec.Struct):
    ts: str
    index: Annotated[int, msgspec.Meta(ge=0, le=1023)]
    uuid: Name = ""
    name: Name = ""
    util: Ratio | None = None
    mem_util: Ratio | None = None
    mem_used_bytes: GpuBytes | None = None
    mem_total_bytes: GpuBytes | None = None
    power_w: _within(plausibility.POWER_W) | None = None
    temp_c: _within(plausibility.TEMPERATURE_C) | None = None
    sm_clock_mhz: _within(plausibility.CLOCK_MHZ) | None = None
    sm_active: Ratio | None = None
    sm_occupancy: Ratio | None = None
    dram_active: Ratio | None = None


class _Body(msgspec.Struct):
    """The batch with its GPU and request lists typed; the rest is left to DRF as decoded."""

    batch_id: Any = UNSET
    host: Any = UNSET
    agent_version: Any = UNSET
    sent_at: Any = UNSET
    scrapes: Any = UNSET
    gpus: list[_Gpu] = []
    requests: list[_Request] = []


_ENVELOPE_FIELDS = ("batch_id", "host", "agent_version", "sent_at", "scrapes")
_GPU_FIELDS = _Gpu.__struct_fields__
_decoder = msgspec.json.Decoder(_Body)


def validate_body(raw: bytes, *, host: Host, now: datetime | None = None) -> dict:
    """The validated batch in `raw`. Raises ValidationError (flattened field paths),
    ParseError (not JSON, nested too deep) or PermissionDenied (another host's batch)."""
    now = now or timezone.now()
    check_raw_depth(raw)  # before any field is read, known or not
    fast = fast_path(raw, now)
    if fast is None:
        return validate_document(loads_limited(raw), {"host": host, "now": now})
    envelope, gpus, requests = fast
    check_depth(envelope)  # the typed lists are flat by construction; the rest is as sent
    context = {"host": host, "now": now, "gpus": gpus, "requests": requests}
    return _validated(IngestEnvelopeSerializer(data=envelope, context=context))


def validate_document(document: Any, context: dict) -> dict:
    """Every field of a batch document through DRF (errors named by field path)."""
    return _validated(IngestBatchSerializer(data=document, context=context))


def _validated(serializer) -> dict:
    if not serializer.is_valid():
        raise ValidationError(flatten_errors(serializer.errors))
    return serializer.validated_data


def fast_path(raw: bytes, now: datetime) -> tuple[dict, list[dict], list[ValidRequest]] | None:
    """(the batch's other fields as decoded, validated GPU samples, validated requests), or
    None: only DRF can judge this body."""
    try:
        body = _decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    start, end = acceptance_window(now)
    requests = []
    append = requests.append
    for r in body.requests:
        ts = parse_rfc3339(r.ts)
        if ts is None or ts.tzinfo is None or not start <= ts <= end:
            return None
        if r.ttft_ms is not None and r.ttft_ms > r.e2e_ms:
            return None  # impossible: DRF names it
        append(
            ValidRequest(
                r.service, ts.astimezone(UTC), r.ttft_ms, r.tpot_ms, r.e2e_ms, r.queue_ms,
                r.prompt_tokens, r.output_tokens, r.ok,
            )
        )  # fmt: skip
    names = {r.service for r in requests}
    gpus = []
    for g in body.gpus:
        ts = parse_rfc3339(g.ts)
        if ts is None or ts.tzinfo is None or not start <= ts <= end:
            return None
        used, total = g.mem_used_bytes, g.mem_total_bytes
        if used is not None and total is not None and used > total:
            return None
        names |= {g.uuid, g.name}
        gpus.append({**{f: getattr(g, f) for f in _GPU_FIELDS}, "ts": ts.astimezone(UTC)})
    if any(CONTROL_CHARACTERS.search(name) for name in names):
        return None
    envelope = {
        name: value
        for name in _ENVELOPE_FIELDS
        if (value := getattr(body, name)) is not msgspec.UNSET
    }
    return envelope, gpus, requests
