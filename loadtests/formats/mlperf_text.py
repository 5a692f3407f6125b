"""MLPerf LoadGen's `mlperf_log_summary.txt` read as a document (`Key : value` lines), for
detection (`detect`) and the `mlperf` format, which reads the document."""

from __future__ import annotations

import re

from .base import Document

KEY = "mlperf_log_summary"  # the document a summary's text is read into
BANNER = "MLPerf Results Summary"
_LINE = re.compile(r"^\s*(?P<key>[^:]*?[^:\s])\s*:\s*(?P<value>.*?)\s*$")


def summary_documents(text: str) -> list[Document] | None:
    """The summary as one document {KEY: {"values": {key: text}, "lines": {key: line},
    "bullets": [...]}}, or None when the text is not a LoadGen summary."""
    head = [line.strip() for line in text.splitlines()[:6]]
    if BANNER not in head:
        return None
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    bullets: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("* "):
            bullets.append(stripped[2:][:300])
            continue
        match = _LINE.match(line)
        if match is None or set(stripped) <= {"="}:
            continue
        key = " ".join(match["key"].split())
        if key not in values:  # "Completed tokens per second" is printed twice
            values[key] = match["value"]
            lines[key] = number
    return [Document({KEY: {"values": values, "lines": lines, "bullets": bullets}}, origin="text")]
