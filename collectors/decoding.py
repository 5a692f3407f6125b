"""From an ingest body (bytes) to `IngestBatchSerializer.validated_data`, fast when it is valid.

Agents send a thousand request samples a batch; DRF's per-field machinery costs ~20 us a sample,
more than the database spends storing it. So the request and GPU lists are first decoded and
checked by msgspec (compiled: decoding and type checks in one pass, ~1 us a sample), under rules
that accept only what `RequestSampleSerializer` / `GpuSampleSerializer` accept unchanged: JSON
numbers for numbers, JSON booleans for booleans, the same bounds, timestamps through the same
RFC 3339 parser (msgspec's, in C; `collectors.samples`) and acceptance window, no control
characters in names. Requests are decoded straight into `ValidRequest`: no Python object is
made per sample but the one the ingest service reads. The batch's own fields
and its scrapes (exposition text, parsed anyway) go through DRF (`IngestEnvelopeSerializer`).
When msgspec refuses anything, the whole body goes through `IngestBatchSerializer` instead,
which names the bad field (`requests[3].e2e_ms`): msgspec never words an error.

The depth limit (PERFHUB_API_MAX_JSON_DEPTH) holds for every key, read or not. A body of only
known fields is decoded first by a strict decoder (unknown fields refused): every value in it
is then either typed and flat (the two lists) or decoded and depth-checked (the envelope), so
the raw bytes need no scan. A body with fields this version does not know (a newer agent) is
scanned on the raw bytes, then decoded by a decoder that skips them, still without DRF.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from analysis import plausibility
from collectors.models import Host
from collectors.samples import GpuBytes, Name, Ratio, ValidRequest, bounded
from collectors.serializers import (
    CONTROL_CHARACTERS,
    IngestBatchSerializer,
    IngestEnvelopeSerializer,
    acceptance_window,
)
from core.api import check_depth, check_raw_depth, flatten_errors, loads_limited

UNSET: Any = msgspec.UNSET


class _Gpu(msgspec.Struct, gc=False):
    ts: datetime
    index: Annotated[int, msgspec.Meta(ge=0, le=1023)]
    uuid: Name = ""
    name: Name = ""
    util: Ratio | None = None
    mem_util: Ratio | None = None
    mem_used_bytes: GpuBytes | None = None
    mem_total_bytes: GpuBytes | None = None
    power_w: bounded(plausibility.POWER_W) | None = None
    temp_c: bounded(plausibility.TEMPERATURE_C) | None = None
    sm_clock_mhz: bounded(plausibility.CLOCK_MHZ) | None = None
    sm_active: Ratio | None = None
    sm_occupancy: Ratio | None = None
    dram_active: Ratio | None = None


class _KnownGpu(_Gpu, forbid_unknown_fields=True, gc=False):
    pass


class _AnyRequest(ValidRequest, forbid_unknown_fields=False, gc=False):
    """A request sample whose unknown fields are skipped (ValidRequest refuses them)."""


class _KnownBody(msgspec.Struct, forbid_unknown_fields=True):
    """The batch with its GPU and request lists typed, the rest left to DRF as decoded; no
    field it does not name, in the batch or its samples."""

    batch_id: Any = UNSET
    host: Any = UNSET
    agent_version: Any = UNSET
    sent_at: Any = UNSET
    scrapes: Any = UNSET
    gpus: list[_KnownGpu] = []
    requests: list[ValidRequest] = []


class _Body(_KnownBody, forbid_unknown_fields=False):
    """The same, skipping unknown fields."""

    gpus: list[_Gpu] = []
    requests: list[_AnyRequest] = []


_ENVELOPE_FIELDS = ("batch_id", "host", "agent_version", "sent_at", "scrapes")
_GPU_FIELDS = _Gpu.__struct_fields__
_decoder = msgspec.json.Decoder(_KnownBody)
_skipping_decoder = msgspec.json.Decoder(_Body)  # unknown fields unread: scan the bytes first


def validate_body(raw: bytes, *, host: Host, now: datetime | None = None) -> dict:
    """The validated batch in `raw`. Raises ValidationError (flattened field paths),
    ParseError (not JSON, nested too deep) or PermissionDenied (another host's batch)."""
    now = now or timezone.now()
    body = _decoded(raw, _decoder)
    if body is None:  # unknown fields (or not what msgspec types): scan, then skip them
        check_raw_depth(raw)  # before any unknown field is skipped unread
        body = _decoded(raw, _skipping_decoder)
    fast = None if body is None else _checked(body, now)
    if fast is None:
        return validate_document(loads_limited(raw), {"host": host, "now": now})
    envelope, gpus, requests = fast
    check_depth(envelope)  # the typed lists are flat by construction; the rest is as sent
    # The lists join the envelope's fields after DRF is done: a serializer and its fields
    # reference each other, so whatever it holds waits for the cyclic garbage collector, and
    # a thousand samples a batch held that way grew a worker by ~3 kB a batch between full
    # collections.
    envelope = _validated(
        IngestEnvelopeSerializer(data=envelope, context={"host": host, "now": now})
    )
    return {**envelope, "gpus": gpus, "requests": requests}


def validate_document(document: Any, context: dict) -> dict:
    """Every field of a batch document through DRF (errors named by field path)."""
    return _validated(IngestBatchSerializer(data=document, context=context))


def _validated(serializer) -> dict:
    if not serializer.is_valid():
        raise ValidationError(flatten_errors(serializer.errors))
    return serializer.validated_data


def _in_window(samples: list, start: datetime, end: datetime) -> bool:
    """Whether every sample's `ts` has an offset and lies in [start, end]; the timestamps are
    made UTC as the DRF path makes them. A list of a thousand costs one pass to collect the
    stamps and their zones, then `min`/`max` in C, not a comparison call per sample."""
    if not samples:
        return True
    stamps = [s.ts for s in samples]
    zones = {ts.tzinfo for ts in stamps}
    if None in zones:
        return False  # a naive timestamp: DRF names it
    if not (start <= min(stamps) and max(stamps) <= end):  # aware: compared as instants
        return False
    if zones != {UTC}:
        for sample in samples:
            sample.ts = sample.ts.astimezone(UTC)
    return True


def fast_path(
    raw: bytes, now: datetime, decoder: msgspec.json.Decoder = _decoder
) -> tuple[dict, list[dict], list[ValidRequest]] | None:
    """(the batch's other fields as decoded, validated GPU samples, validated requests), or
    None: only DRF can judge this body (or, by the default decoder, it has unknown fields)."""
    body = _decoded(raw, decoder)
    return None if body is None else _checked(body, now)


def _decoded(raw: bytes, decoder: msgspec.json.Decoder) -> _KnownBody | None:
    try:
        return decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def _checked(body: _KnownBody, now: datetime) -> tuple[dict, list[dict], list[ValidRequest]] | None:
    """`fast_path`'s answer for a decoded body: the checks msgspec's types cannot make."""
    start, end = acceptance_window(now)
    requests = body.requests
    if not _in_window(requests, start, end):
        return None
    if any(r.ttft_ms is not None and r.ttft_ms > r.e2e_ms for r in requests):
        return None  # impossible: DRF names it
    names = {r.service for r in requests}
    gpus = []
    if not _in_window(body.gpus, start, end):
        return None
    for g in body.gpus:
        used, total = g.mem_used_bytes, g.mem_total_bytes
        if used is not None and total is not None and used > total:
            return None
        names |= {g.uuid, g.name}
        gpus.append({f: getattr(g, f) for f in _GPU_FIELDS})
    if any(CONTROL_CHARACTERS.search(name) for name in names):
        return None
    envelope = {
        name: value
        for name in _ENVELOPE_FIELDS
        if (value := getattr(body, name)) is not msgspec.UNSET
    }
    return envelope, gpus, requests
