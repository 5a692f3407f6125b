"""The time range a dashboard draws: a preset (1 h, 24 h, 7 d, 30 d) or a custom start/end.

Parsed from the query string (`?range=24h`, or `?range=custom&start=...&end=...`); an invalid
request names the bad field. Custom times without an offset are read as UTC.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from django.utils import timezone
from django.utils.dateparse import parse_datetime

from collectors.selectors import resolution_for

PRESETS: dict[str, tuple[str, timedelta]] = {
    "1h": ("1 h", timedelta(hours=1)),
    "24h": ("24 h", timedelta(hours=24)),
    "7d": ("7 d", timedelta(days=7)),
    "30d": ("30 d", timedelta(days=30)),
}
DEFAULT_RANGE = "24h"
MAX_SPAN = timedelta(days=400)


class RangeError(ValueError):
    """A bad range request; `field` names the query parameter at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class TimeRange:
    key: str  # a PRESETS key or "custom"
    start: datetime
    end: datetime

    @property
    def resolution_s(self) -> int:
        return resolution_for(self.start, self.end)

    @property
    def label(self) -> str:
        if self.key in PRESETS:
            return f"last {PRESETS[self.key][0]}"
        return f"{self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M} UTC"

    def query(self) -> dict[str, str]:
        """The query parameters that reproduce this range."""
        if self.key in PRESETS:
            return {"range": self.key}
        return {
            "range": "custom",
            "start": self.start.strftime("%Y-%m-%dT%H:%M"),
            "end": self.end.strftime("%Y-%m-%dT%H:%M"),
        }


def _parse_time(field: str, raw: str) -> datetime:
    value = parse_datetime(raw.strip())
    if value is None:
        raise RangeError(field, f"{raw!r} is not a date and time (YYYY-MM-DDTHH:MM).")
    return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)


def parse_range(params, *, now: datetime | None = None, default: str = DEFAULT_RANGE) -> TimeRange:
    """The range named by `params` (a QueryDict or dict). Raises RangeError."""
    now = now or timezone.now()
    key = (params.get("range") or default).strip()
    if key in PRESETS:
        return TimeRange(key, now - PRESETS[key][1], now)
    if key != "custom":
        choices = ", ".join([*PRESETS, "custom"])
        raise RangeError("range", f"{key!r} is not one of {choices}.")
    if not params.get("start"):
        raise RangeError("start", "A custom range needs a start.")
    start = _parse_time("start", params["start"])
    end = _parse_time("end", params["end"]) if params.get("end") else now
    if start >= end:
        raise RangeError("start", "Must be before end.")
    if end - start > MAX_SPAN:
        raise RangeError("start", f"The range is limited to {MAX_SPAN.days} days.")
    return TimeRange("custom", start, end)
