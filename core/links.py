"""Absolute links to PerfHub's pages, for what leaves a request: notifications, exports."""

from __future__ import annotations

from django.conf import settings


def site_url(path: str) -> str:
    """`path` at SITE_URL, the address people open PerfHub at."""
    return settings.SITE_URL.rstrip("/") + path
