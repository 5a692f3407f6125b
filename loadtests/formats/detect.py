"""Reading a load-test file as JSON (one object, or JSON lines) and telling which tool wrote it.

The format comes from the content; the file name only breaks a tie between formats whose
signatures both match.
"""

from __future__ import annotations

import json

from webapi.core import json_depth_exceeds

from . import genai_perf, guidellm, llmperf, vllm_bench
from .base import FORMATS, Ctx, Document, LoadTestFormatError, json_type

SIGNATURES = {
    vllm_bench.FORMAT: vllm_bench.looks_like,
    genai_perf.FORMAT: genai_perf.looks_like,
    guidellm.FORMAT: guidellm.looks_like,
    llmperf.FORMAT: llmperf.looks_like,
}
FILENAME_HINTS = {
    "vllm-bench": ("vllm", ".jsonl"),
    "genai-perf": ("genai", "profile_export"),
    "guidellm": ("guidellm", "benchmarks"),
    "llmperf": ("llmperf", "_summary"),
}
EXPECTED = "expected one of " + ", ".join(FORMATS)


def decode(content: bytes | str) -> str:
    if isinstance(content, str):
        return content.removeprefix("\ufeff")
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadTestFormatError(
            f"not UTF-8 text (byte {exc.start}): {EXPECTED} as JSON"
        ) from None


# Load-test results nest a few levels; anything far deeper is not one (and must not exhaust
# the parser's recursion).
MAX_JSON_DEPTH = 32


def _loads(text: str):
    try:
        value = json.loads(text)
    except RecursionError:
        value = None
    else:
        if not json_depth_exceeds(value, MAX_JSON_DEPTH):
            return value
    raise LoadTestFormatError(f"JSON nested more than {MAX_JSON_DEPTH} levels deep")


def load_documents(text: str, *, format: str | None = None) -> list[Document]:
    """One document for a JSON file; one per non-blank line for JSON lines."""
    prefix = f"{format}: " if format else ""
    if not text.strip():
        raise LoadTestFormatError(
            f"{prefix}the file is empty" + ("" if format else f": {EXPECTED}")
        )
    try:
        return [Document(_loads(text))]
    except json.JSONDecodeError as whole:
        whole_error = whole
    lines = text.splitlines()
    first = next(index for index, line in enumerate(lines) if line.strip())
    try:
        first_value = _loads(lines[first])
    except json.JSONDecodeError:
        first_value = None
    if not isinstance(first_value, dict):
        # Not JSON lines either: report where the JSON itself broke.
        raise LoadTestFormatError(
            f"{prefix}not valid JSON: {whole_error.msg} (line {whole_error.lineno}, "
            f"column {whole_error.colno})" + ("" if format else f"; {EXPECTED}")
        )
    fmt = format or _quiet_detect(first_value) or "load test"
    documents = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = _loads(line)
        except json.JSONDecodeError as exc:
            raise Ctx(fmt, line=number).error(
                f"not valid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        if not isinstance(value, dict):
            raise Ctx(fmt, line=number).error(f"expected a JSON object, got a {json_type(value)}")
        documents.append(Document(value, line=number))
    return documents


def detect_format(documents: list[Document], *, filename: str | None = None) -> str:
    """The format whose signature the first document matches; the file name breaks ties."""
    data = documents[0].data if documents else None
    if not isinstance(data, dict):
        raise LoadTestFormatError(
            f"could not detect the format (the JSON is a {json_type(data)}, "
            f"not an object): {EXPECTED}"
        )
    matches = [fmt for fmt, looks_like in SIGNATURES.items() if looks_like(data)]
    if len(matches) > 1 and filename:
        name = filename.lower()
        hinted = [fmt for fmt in matches if any(hint in name for hint in FILENAME_HINTS[fmt])]
        if len(hinted) == 1:
            return hinted[0]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LoadTestFormatError(
            f"could not detect the format: the content matches {' and '.join(matches)}; "
            "pass the format explicitly"
        )
    raise LoadTestFormatError(f"could not detect the format: {EXPECTED}")


def _quiet_detect(data: dict) -> str | None:
    matches = [fmt for fmt, looks_like in SIGNATURES.items() if looks_like(data)]
    return matches[0] if len(matches) == 1 else None
