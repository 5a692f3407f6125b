"""The push document (docs/contracts.md, agent push v1)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from . import __version__


def rfc3339(moment: datetime) -> str:
    """UTC, millisecond precision, `Z` suffix: `2025-01-31T12:00:00.123Z`."""
    if moment.tzinfo is None:
        raise ValueError("rfc3339 needs an aware datetime")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_batch(
    *,
    host: str,
    gpus: list[dict[str, Any]] | None = None,
    scrapes: list[dict[str, Any]] | None = None,
    requests: list[dict[str, Any]] | None = None,
    now: datetime | None = None,
) -> dict[str, Any]:
    """A fresh batch with its own uuid4; a replay sends this same document again."""
    return {
        "batch_id": str(uuid.uuid4()),
        "host": host,
        "agent_version": __version__,
        "sent_at": rfc3339(now or datetime.now(UTC)),
        "gpus": list(gpus or []),
        "scrapes": list(scrapes or []),
        "requests": list(requests or []),
    }
