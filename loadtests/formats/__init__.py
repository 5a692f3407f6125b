"""Load-test result files -> one normalized `ParsedRun` per run (no Django here).

    runs = parse_loadtest(path.read_bytes(), filename=path.name)
    runs = parse_loadtest(content, format="guidellm")

Formats live in the registry (`registry.register`), one module each in this folder, imported by
`core.discovery` below; detection order is each format's `priority`: `vllm bench serve` JSON,
JSON lists and JSON lines, GenAI-Perf / AIPerf profile exports, guidellm reports, ray llmperf
`*_summary.json`. A file that fails anywhere raises `LoadTestFormatError` and yields nothing, so
a caller stores all of a file or none of it. docs/loadtest-formats.md maps every key.
"""

from __future__ import annotations

from core.discovery import import_submodules

from .base import (
    FIELD_NAMES,
    LATENCY_FIELDS,
    SAMPLE_KEYS,
    SHARED_TIME_NOTE,
    TWIN_FIGURES,
    Document,
    LoadTestFormatError,
    ParsedRun,
    finish,
)
from .detect import decode, detect_format, load_documents
from .registry import (
    LoadTestFormat,
    choices,
    format_names,
    formats,
    get_format,
    register,
    unregister,
)

# Every module in this folder is imported, and a format module registers itself on import.
import_submodules(__name__)


def parse_loadtest(
    content: bytes | str, *, format: str | None = None, filename: str | None = None
) -> list[ParsedRun]:
    """Every run in the file, in file order; `format` forces a parser instead of detection."""
    fmt = get_format(format) if format is not None else None
    documents = load_documents(decode(content), format=format)
    if fmt is None:
        fmt = detect_format(documents, filename=filename)
    return [finish(run) for run in fmt.parse(documents)]


__all__ = [
    "FIELD_NAMES",
    "LATENCY_FIELDS",
    "SAMPLE_KEYS",
    "SHARED_TIME_NOTE",
    "TWIN_FIGURES",
    "Document",
    "LoadTestFormat",
    "LoadTestFormatError",
    "ParsedRun",
    "choices",
    "decode",
    "detect_format",
    "format_names",
    "formats",
    "get_format",
    "load_documents",
    "parse_loadtest",
    "register",
    "unregister",
]
