"""From an ingest body (bytes) to `IngestBatchSerializer.validated_data`, fast when it is valid.

Agents send a thousand request samples a batch; DRF's per-field machinery costs ~20 us a sample,
more than the database spends storing it. So the request list is first decoded and checked by
msgspec (compiled; decoding and type checks in one pass, ~1 us a sample), under rules that
accept only what `RequestSampleSerializer` accepts unchanged: JSON numbers for numbers, JSON
booleans for `ok`, timestamps through the same `parse_rfc3339` and acceptance window, known
service slugs without control characters. The rest of the document (a few GPU samples and
scrapes) always goes through DRF. When msgspec refuses anything, the whole body goes through
DRF instead, which names the bad field (`requests[3].e2e_ms`); msgspec never decides an error.
"""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from typing import Annotated, Any

import msgspec
from django.utils import timezone
from rest_framework.exceptions import ValidationError

from collectors.models import Host
from collectors.serializers import (
    CONTROL_CHARACTERS,
    IngestBatchSerializer,
    ValidRequest,
    acceptance_window,
    parse_rfc3339,
)
from perfhub.api import check_depth, flatten_errors, loads_limited

# Finite and >= 0 (JSON has no NaN; a huge exponent is refused by the decoder as out of range).
Number = Annotated[float, msgspec.Meta(ge=0, le=sys.float_info.max)]
Count = Annotated[int, msgspec.Meta(ge=0, le=2**62)]
UNSET: Any = msgspec.UNSET


class _Request(msgspec.Struct):
    ts: str
    service: Annotated[str, msgspec.Meta(min_length=1, max_length=50)]
    e2e_ms: Number
    ttft_ms: Number | None = None
    tpot_ms: Number | None = None
    queue_ms: Number | None = None
    prompt_tokens: Count | None = None
    output_tokens: Count | None = None
    ok: bool = True


class _Body(msgspec.Struct):
    """The batch with its request list typed; the other fields are left to DRF as decoded."""

    batch_id: Any = UNSET
    host: Any = UNSET
    agent_version: Any = UNSET
    sent_at: Any = UNSET
    gpus: Any = UNSET
    scrapes: Any = UNSET
    requests: list[_Request] = []


_OTHER_FIELDS = ("batch_id", "host", "agent_version", "sent_at", "gpus", "scrapes")


_decoder = msgspec.json.Decoder(_Body)


def validate_body(raw: bytes, *, host: Host, now: datetime | None = None) -> dict:
    """The validated batch in `raw`. Raises ValidationError (flattened field paths),
    ParseError (not JSON, nested too deep) or PermissionDenied (another host's batch)."""
    now = now or timezone.now()
    fast = fast_path(raw, now)
    if fast is None:
        document, context = loads_limited(raw), {"host": host, "now": now}
    else:
        document, requests = fast
        check_depth(document)  # the request list is flat by type; the rest is as sent
        context = {"host": host, "now": now, "requests": requests}
    return validate_document(document, context)


def validate_document(document: Any, context: dict) -> dict:
    serializer = IngestBatchSerializer(data=document, context=context)
    if not serializer.is_valid():
        raise ValidationError(flatten_errors(serializer.errors))
    return serializer.validated_data


def fast_path(raw: bytes, now: datetime) -> tuple[dict, list[ValidRequest]] | None:
    """(the document without its requests, the validated requests), or None: ask DRF."""
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
        append(
            ValidRequest(
                r.service, ts.astimezone(UTC), r.ttft_ms, r.tpot_ms, r.e2e_ms, r.queue_ms,
                r.prompt_tokens, r.output_tokens, r.ok,
            )
        )  # fmt: skip
    if any(CONTROL_CHARACTERS.search(slug) for slug in {r.service for r in requests}):
        return None
    document = {
        name: value for name in _OTHER_FIELDS if (value := getattr(body, name)) is not msgspec.UNSET
    }
    return document, requests
