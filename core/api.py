"""What every API answer shares: bodies read with a size limit (chunked too), JSON with a depth
limit, and errors as JSON naming the field, never an HTML page.

- `ApiBodyMiddleware`: for `/api/` paths, a body over `PERFHUB_API_MAX_BYTES` is a 413 whether
  declared by Content-Length or sent chunked (counted while reading); a chunked body is read
  so that Django and DRF see it (Django alone reads a body without Content-Length as empty).
- `read_limited` / `loads_limited`: the parsers' size and nesting limits.
- `exception_handler` (DRF) and `handler400` / `handler404` / `handler500` (Django, in the root
  URLconf): `{"field.path": ["message"]}` or `{"detail": "..."}` for anything under `/api/`.
"""

from __future__ import annotations

import io
import json
import logging
import re
from datetime import UTC, datetime
from typing import Any

import msgspec
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.handlers.wsgi import LimitedStream
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import exceptions, parsers, serializers, status

logger = logging.getLogger(__name__)

API_PREFIX = "/api/"
# Read steps: an ordinary agent batch (~200 kB) in one read. gunicorn answers each read by
# re-buffering what it holds; in 64 kB steps that cost a 210 kB body 0.51 ms of the worker's
# CPU against 0.38 ms in one read (a bare WSGI app under gunicorn, 2,000 posts each).
READ_SIZE = 1024 * 1024


class DetailSerializer(serializers.Serializer):
    """An error answer that is not about one field (for the schema)."""

    detail = serializers.CharField()


def parse_rfc3339(value: object) -> datetime | None:
    """The datetime an RFC 3339 string spells, or None; naive when it has no offset (the caller
    decides whether that will do). msgspec's parser, the one ingest's hot path decodes with:
    seconds required; "T", "t" or a space between date and time; "Z" or an offset up to +-23:59;
    digits past the microsecond rounded.
    """
    if type(value) is not str:
        return None
    try:
        return msgspec.convert(value, datetime)
    except msgspec.ValidationError:
        return None


@extend_schema_field(OpenApiTypes.DATETIME)
class Rfc3339Field(serializers.Field):
    """An RFC 3339 time with its zone offset (`2026-12-01T12:00:00Z`, `+05:30`), returned in UTC:
    every time the API takes is read by this one parser. A time without an offset is refused,
    not read in the server's zone: an agent's or a CI job's clock may be anywhere. Subclasses
    bound it further in `check`.
    """

    default_error_messages = {
        "invalid": "An RFC 3339 timestamp is required, e.g. 2025-01-31T12:00:00Z.",
        "naive": "The timestamp needs a time zone offset (RFC 3339), e.g. Z or +00:00.",
        "overflow": "The timestamp is out of range.",
    }

    def to_internal_value(self, data) -> datetime:
        value = parse_rfc3339(data)
        if value is None:
            self.fail("invalid")
        if value.tzinfo is None:
            self.fail("naive")
        self.check(value, data)
        try:
            return value.astimezone(UTC)
        except OverflowError:  # 9999-12-31T23:59:59-23:59 is past datetime's last UTC day
            self.fail("overflow")

    def check(self, value: datetime, data: str) -> None:
        """Further bounds on an aware `value` (`data` as sent); `self.fail` when outside them."""

    def to_representation(self, value: datetime) -> str:
        return value.isoformat()


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."
    default_code = "too_large"


def too_large_detail(limit: int) -> str:
    return f"Request body over the limit of {limit:,} bytes."


def is_api(request: HttpRequest) -> bool:
    return request.path.startswith(API_PREFIX)


def read_limited(stream, limit: int) -> bytes:
    """At most `limit` bytes of `stream`; raises PayloadTooLarge as soon as there are more."""
    chunks, size = [], 0
    while True:
        chunk = stream.read(min(READ_SIZE, limit + 1 - size))
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > limit:
            raise PayloadTooLarge(too_large_detail(limit))
        chunks.append(chunk)


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether `value` nests lists/objects more than `limit` levels deep (iterative: no
    recursion limit to hit on hostile input)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in item if isinstance(child, dict | list))
    return False


_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'"[]{}')
_STRING = re.compile(rb'"[^"]*"')  # once escaped quotes are gone
_INNERMOST = re.compile(rb"\[\]|\{\}")


def raw_depth_exceeds(raw: bytes, limit: int) -> bool:
    """Whether the JSON text `raw` nests lists/objects more than `limit` deep, judged on the
    bytes before anything is decoded, so a field nobody reads (an unknown key 200 levels deep)
    is refused like a known one.

    Strings are cut out (escaped backslashes, then escaped quotes dropped, so every quote
    left opens or closes a string), the brackets outside them kept, and innermost pairs
    removed `limit` times: any pair left was deeper than `limit`. Every step is a bytes
    method or one simple regex (C speed). Unbalanced brackets are left for the
    JSON parser to report."""
    unescaped = raw.replace(b"\\\\", b"").replace(b'\\"', b"") if b"\\" in raw else raw
    # Adjacent quotes are an empty string, or the end of one string and the start of the next
    # with no bracket between: dropping them first leaves the regex little to do.
    structure = unescaped.translate(None, _NOT_STRUCTURE).replace(b'""', b"")
    brackets = _STRING.sub(b"", structure)
    for _ in range(limit):
        if not brackets:
            return False
        brackets = _INNERMOST.sub(b"", brackets)
    return _INNERMOST.search(brackets) is not None


def check_raw_depth(raw: bytes) -> None:
    """ParseError when the body nests deeper than PERFHUB_API_MAX_JSON_DEPTH (raw bytes)."""
    limit = settings.PERFHUB_API_MAX_JSON_DEPTH
    if raw_depth_exceeds(raw, limit):
        raise exceptions.ParseError(f"JSON nested more than {limit} levels deep.")


def loads_limited(raw: bytes) -> Any:
    """JSON from `raw`, refusing more than `PERFHUB_API_MAX_JSON_DEPTH` levels of nesting.

    Python's json is used on purpose: it keeps `NaN`/`Infinity` as floats, so the field that
    holds one is named by its validator (`requests[0].e2e_ms`) rather than by a parse error.
    """
    limit = settings.PERFHUB_API_MAX_JSON_DEPTH
    check_raw_depth(raw)
    try:
        value = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise exceptions.ParseError(f"JSON nested more than {limit} levels deep.") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise exceptions.ParseError(f"JSON parse error - {exc}") from exc
    check_depth(value)
    return value


def check_depth(value: Any) -> None:
    """ParseError when `value` nests deeper than PERFHUB_API_MAX_JSON_DEPTH."""
    limit = settings.PERFHUB_API_MAX_JSON_DEPTH
    if json_depth_exceeds(value, limit):
        raise exceptions.ParseError(f"JSON nested more than {limit} levels deep.")


class LimitedJSONParser(parsers.JSONParser):
    """DRF's JSON parser with the size limit counted while reading and the depth limit."""

    def parse(self, stream, media_type=None, parser_context=None):
        raw = read_limited(stream, settings.PERFHUB_API_MAX_BYTES) if stream is not None else b""
        return loads_limited(raw)


class ApiBodyMiddleware:
    """413 for API bodies over the limit (declared or counted); chunked API bodies read."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api(request):
            limit = settings.PERFHUB_API_MAX_BYTES
            declared = request.META.get("CONTENT_LENGTH") or ""
            if declared.isdigit() and int(declared) > limit:
                return too_large(limit)
            chunked = "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower()
            if chunked and not declared:
                try:
                    body = read_limited(request.environ["wsgi.input"], limit)
                except PayloadTooLarge:
                    return too_large(limit)
                request._stream = LimitedStream(io.BytesIO(body), len(body))
                request.META["CONTENT_LENGTH"] = str(len(body))
        return self.get_response(request)


def too_large(limit: int) -> JsonResponse:
    return JsonResponse({"detail": too_large_detail(limit)}, status=413)


def flatten_errors(detail: Any, path: str = "") -> dict[str, list[str]]:
    """DRF's nested errors as `{"requests[3].e2e_ms": ["..."]}`: one key per bad field path."""
    flat: dict[str, list[str]] = {}
    if isinstance(detail, dict):
        for key, value in detail.items():
            if isinstance(key, int):  # a list's errors by index
                child = f"{path}[{key}]"
            elif key == "non_field_errors" and path:
                child = path
            elif not path:
                child = f"{path}{key}"
            else:
                child = f"{path}.{key}"
            flat.update(flatten_errors(value, child))
    elif isinstance(detail, list) and any(isinstance(v, dict | list) for v in detail):
        for i, value in enumerate(detail):
            if value:
                flat.update(flatten_errors(value, f"{path}[{i}]"))
    elif isinstance(detail, list):
        flat.setdefault(path or "non_field_errors", []).extend(str(v) for v in detail)
    else:
        flat.setdefault(path or "non_field_errors", []).append(str(detail))
    return flat


def exception_handler(exc: Exception, context: dict) -> HttpResponse | None:
    """DRF's handler, plus: validation errors keyed by field path, a body over Django's own
    upload limit as 413, and any other exception as a JSON 500 (logged with its traceback)."""
    # Imported here: DRF's views module reads the settings that name this module's parser.
    from rest_framework.views import exception_handler as drf_exception_handler

    if isinstance(exc, RequestDataTooBig):
        exc = PayloadTooLarge(str(exc) or "Request body too large.")
    response = drf_exception_handler(exc, context)
    if response is None:
        request = context.get("request")
        logger.error("API error on %s", getattr(request, "path", "?"), exc_info=exc)
        return JsonResponse({"detail": "Server error."}, status=500)
    if isinstance(exc, exceptions.ValidationError) and not isinstance(response.data, list):
        response.data = flatten_errors(response.data)
    return response


def handler400(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not is_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return JsonResponse({"detail": str(exception) or "Request body too large."}, status=413)
    return JsonResponse({"detail": "Bad request."}, status=400)


def handler404(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    if not is_api(request):
        return defaults.page_not_found(request, exception)
    return JsonResponse({"detail": f"No API endpoint at {request.path}."}, status=404)


def handler500(request: HttpRequest) -> HttpResponse:
    if not is_api(request):
        return defaults.server_error(request)
    return JsonResponse({"detail": "Server error."}, status=500)
