"""Validators for values people and machines send, shared by every app's models and forms."""

from __future__ import annotations

from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

# The largest id a key column holds (bigint). SQLite cannot even compare a larger integer: an id
# from outside is bounded by this before it reaches a query.
MAX_ID = 2**63 - 1


def validate_http_url(value: str) -> None:
    """An http(s) URL with a host. Unlike Django's URLValidator, single-label host names
    (`http://prometheus:9090`, as in a compose network) are accepted."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018  (raises on a bad port)
    except ValueError as exc:
        raise ValidationError(f"Enter a valid URL ({exc}).") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValidationError("Enter an http:// or https:// URL with a host.")
    if any(ch.isspace() for ch in value):
        raise ValidationError("A URL has no spaces.")
