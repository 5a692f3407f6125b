"""Load-test result files -> one normalized `ParsedRun` per run (no Django here).

    runs = parse_loadtest(path.read_bytes(), filename=path.name)
    runs = parse_loadtest(content, format="guidellm")

Formats: `vllm bench serve` JSON and JSON lines, GenAI-Perf `profile_export_genai_perf.json`,
guidellm reports, ray llmperf `*_summary.json`. A file that fails anywhere raises
`LoadTestFormatError` and yields nothing, so a caller stores all of a file or none of it.
"""

from __future__ import annotations

from . import genai_perf, guidellm, llmperf, vllm_bench
from .base import (
    FIELD_NAMES,
    FORMATS,
    LATENCY_FIELDS,
    SAMPLE_KEYS,
    LoadTestFormatError,
    ParsedRun,
)
from .detect import decode, detect_format, load_documents

PARSERS = {
    vllm_bench.FORMAT: vllm_bench.parse,
    genai_perf.FORMAT: genai_perf.parse,
    guidellm.FORMAT: guidellm.parse,
    llmperf.FORMAT: llmperf.parse,
}


def parse_loadtest(
    content: bytes | str, *, format: str | None = None, filename: str | None = None
) -> list[ParsedRun]:
    """Every run in the file, in file order; `format` forces a parser instead of detection."""
    if format is not None and format not in PARSERS:
        raise LoadTestFormatError(
            f"unknown format {format!r}: expected one of {', '.join(FORMATS)}"
        )
    documents = load_documents(decode(content), format=format)
    fmt = format or detect_format(documents, filename=filename)
    return PARSERS[fmt](documents)


__all__ = [
    "FIELD_NAMES",
    "FORMATS",
    "LATENCY_FIELDS",
    "SAMPLE_KEYS",
    "LoadTestFormatError",
    "ParsedRun",
    "detect_format",
    "parse_loadtest",
]
