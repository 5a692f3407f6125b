"""Short, readable reasons for failed HTTP calls (requests nests urllib3's long reprs)."""

from __future__ import annotations

import re

import requests

_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")]+)")
_MAX = 300


def request_error_reason(exc: requests.RequestException, timeout: float | None = None) -> str:
    """'timed out after 5 s', 'connection failed: Connection refused', else the message."""
    if isinstance(exc, requests.Timeout):
        return f"timed out after {timeout} s" if timeout is not None else "timed out"
    text = str(exc) or type(exc).__name__
    if isinstance(exc, requests.ConnectionError):
        match = _ERRNO.search(text)
        if match:
            return f"connection failed: {match.group(1).strip()}"
    return text if len(text) <= _MAX else text[:_MAX] + "..."
