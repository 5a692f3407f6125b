"""Reading Prometheus exposition text with prometheus_client's parser, with line numbers on errors.

The parser raises a bare ValueError without saying where; the ingest API must name the bad line
(docs/contracts.md), so on failure we find it: the first line that fails on its own, or else
the line the parser was reading when it gave up.
"""

from __future__ import annotations

import io
from collections.abc import Iterator

from prometheus_client.parser import text_fd_to_metric_families, text_string_to_metric_families
from prometheus_client.samples import Sample

# Parsing malformed text can fail in more than ValueError inside prometheus_client.
_PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError)


class ExpositionError(ValueError):
    """Malformed exposition text; `line` is 1-based (None when no single line is at fault)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        self.detail = message
        super().__init__(f"line {line}: {message}" if line is not None else message)


class _CountingLines(io.StringIO):
    """A text stream that remembers which line the parser last read."""

    line = 0

    def __next__(self) -> str:
        text = super().__next__()
        self.line += 1
        return text


def samples(text: str) -> Iterator[Sample]:
    """Every sample in the text, in order. Raises ExpositionError naming the bad line."""
    stream = _CountingLines(text)
    try:
        for family in text_fd_to_metric_families(stream):
            yield from family.samples
    except _PARSE_ERRORS as exc:
        raise _locate_error(text, exc, stream.line) from exc


def lines(text: str) -> list[str]:
    """The text's lines as the parser reads them (split at \\n only), so line numbers agree;
    `str.splitlines` would also split at \\r, form feeds and other separators."""
    return text.split("\n")


def _locate_error(text: str, exc: Exception, reading: int) -> ExpositionError:
    for number, line in enumerate(lines(text), start=1):
        if not line.strip():
            continue
        try:
            for _family in text_string_to_metric_families(line):
                pass
        except _PARSE_ERRORS as line_exc:
            return ExpositionError(_describe(line_exc, line), number)
    return ExpositionError(_describe(exc, None), reading or None)


def _describe(exc: Exception, line: str | None) -> str:
    reason = str(exc).strip() or "cannot parse"
    if line is None:
        return reason
    shown = line.strip()
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return f"{reason} in {shown!r}" if shown not in reason else reason


def line_of(text: str, name: str, labels: dict[str, str], occurrence: int = 1) -> int | None:
    """The 1-based line of the sample `name{labels}` (its n-th copy), for errors found later."""
    # The parser renames typed counters to `_total`; the text may spell them either way.
    base = name.removesuffix("_total")
    for number, line in enumerate(lines(text), start=1):
        stripped = line.lstrip()
        if not stripped.startswith(base):
            continue
        try:
            for family in text_string_to_metric_families(stripped):
                for sample in family.samples:
                    if sample.name in (base, base + "_total") and sample.labels == labels:
                        occurrence -= 1
                        if occurrence == 0:
                            return number
        except _PARSE_ERRORS:
            continue
    return None
