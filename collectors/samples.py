"""The typed request sample both ingest validation paths produce, and the msgspec types that
bound its numbers.

`ValidRequest` is a msgspec Struct, so the hot path (`collectors.decoding`) decodes a batch's
request list straight into it, timestamps included, in compiled code; the DRF path
(`RequestSampleSerializer`) builds the same type from its validated fields. Either way it
reaches `collectors.services.ingest` with the same fields and `ts` in UTC.

Timestamps are parsed by msgspec's RFC 3339 parser on both paths (`core.api.parse_rfc3339` calls
it for DRF), so the two paths accept the same strings as the same instants.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

import msgspec

from analysis import plausibility


def bounded(rng: plausibility.Range, kind: type = float) -> Any:
    """msgspec's bounds for a range of analysis.plausibility (the DRF path names the field)."""
    return Annotated[kind, msgspec.Meta(ge=rng.low, le=rng.high)]


# Finite and physically possible (JSON has no NaN; the bounds keep roll-up sums finite).
Latency = bounded(plausibility.LATENCY_MS)
Tokens = bounded(plausibility.TOKENS, int)
Ratio = bounded(plausibility.RATIO)
GpuBytes = bounded(plausibility.GPU_MEMORY_BYTES, int)
Name = Annotated[str, msgspec.Meta(max_length=100)]
Slug = Annotated[str, msgspec.Meta(min_length=1, max_length=50)]


# gc=False: only numbers, strings and datetimes, no cycles; a thousand a batch stay out of the
# garbage collector's way. kw_only: the fields keep this order with required ones among them.
# forbid_unknown_fields: decoding it accepts no field it does not type, so a body of them
# needs no depth scan (collectors.decoding decodes others into a subclass that skips them).
class ValidRequest(msgspec.Struct, kw_only=True, gc=False, forbid_unknown_fields=True):
    """One validated request sample (times in ms; `ts` aware, in UTC once validated)."""

    service: Slug
    ts: datetime
    ttft_ms: Latency | None = None
    tpot_ms: Latency | None = None
    e2e_ms: Latency
    queue_ms: Latency | None = None
    prompt_tokens: Tokens | None = None
    output_tokens: Tokens | None = None
    ok: bool = True
