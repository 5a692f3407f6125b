"""Reading a load-test file as JSON (an object, a list of objects, or JSON lines), YAML, the
summary blocks a benchmark printed (`console`), GenAI-Perf's and AIPerf's CSV export
(`metrics_csv`) or MLPerf LoadGen's summary (`mlperf`), and telling which registered format
it is.

The format comes from the content; the file name only breaks a tie between formats whose
signatures both match. A file no format matches is checked against the closest one (the format
whose signature keys it has most of), so the refusal says what the file lacks:
"could not detect the format: looks like vllm-bench: missing 'completed', 'duration'".
"""

from __future__ import annotations

import csv
import json
import re

import yaml

from .base import Ctx, Document, LoadTestFormatError, json_type
from .console import summary_documents
from .guidellm_csv import csv_documents as guidellm_csv
from .metrics_csv import csv_documents
from .mlperf_text import summary_documents as mlperf_summary
from .registry import LoadTestFormat, format_names, formats

# Python's json module recurses once per nesting level; a file nested deeper than this is no
# tool's output, and refusing it early keeps a hostile file from exhausting the stack.
MAX_DEPTH = 64


def expected() -> str:
    return "expected one of " + ", ".join(format_names())


def decode(content: bytes | str) -> str:
    if isinstance(content, str):
        return content.removeprefix("\ufeff")
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with its BOM (PowerShell's `>`)
        try:
            return content.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise LoadTestFormatError(f"not UTF-16 text (byte {exc.start})") from None
    try:
        return content.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LoadTestFormatError(
            f"not UTF-8 text (byte {exc.start}): {expected()} as JSON"
        ) from None


def _nesting_depth(text: str) -> int:
    """Deepest bracket nesting outside strings; a linear scan, so it never recurses itself."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def parse_json(text: str) -> object:
    """One JSON value, refused (LoadTestFormatError) past MAX_DEPTH levels before it is parsed;
    json.JSONDecodeError when it is not JSON."""
    return _loads(text, "")


def _loads(text: str, prefix: str) -> object:
    if _nesting_depth(text) > MAX_DEPTH:
        raise LoadTestFormatError(f"{prefix}the JSON is nested more than {MAX_DEPTH} levels deep")
    return json.loads(text)


# libyaml when PyYAML was built with it (the wheels are): a large report parses in C.
_YamlBase = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _YamlLoader(_YamlBase):
    """guidellm also writes its report as YAML. Safe types only, and times left as text (they
    are not a format's times)."""


_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_YAML_START = re.compile(r"^(---|[A-Za-z_][\w-]*:(\s|$))")


def _yaml_document(text: str, prefix: str) -> Document | None:
    """The YAML mapping the text holds, or None when it is not YAML that starts with a key."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    if not _YAML_START.match(first):
        return None
    indent = max((len(line) - len(line.lstrip(" ")) for line in text.splitlines()), default=0)
    if _nesting_depth(text) > MAX_DEPTH or indent > 4 * MAX_DEPTH:
        raise LoadTestFormatError(f"{prefix}the YAML is nested more than {MAX_DEPTH} levels deep")
    try:
        # No aliases: `&a [*a, *a, ...]` expands without bound.
        for event in yaml.parse(text, Loader=_YamlLoader):
            if isinstance(event, yaml.AliasEvent):
                line = event.start_mark.line + 1 if event.start_mark else "?"
                raise LoadTestFormatError(f"{prefix}YAML aliases are not read (line {line})")
        value = yaml.load(text, Loader=_YamlLoader)  # a safe loader, see above
    except LoadTestFormatError:
        raise
    except RecursionError:
        raise LoadTestFormatError(
            f"{prefix}the YAML is nested more than {MAX_DEPTH} levels deep"
        ) from None
    except (yaml.YAMLError, ValueError):
        return None
    return Document(value) if isinstance(value, dict) else None


def load_documents(text: str, *, format: str | None = None) -> list[Document]:
    """One document per run: the object, each object of a top-level list, or each JSON line.
    A YAML mapping (guidellm's .yaml report) is read like the JSON object it mirrors."""
    prefix = f"{format}: " if format else ""
    if not text.strip():
        raise LoadTestFormatError(
            f"{prefix}the file is empty" + ("" if format else f": {expected()}")
        )
    try:
        value = _loads(text, prefix)
    except json.JSONDecodeError as whole:
        return _json_lines(text, whole, format=format, prefix=prefix)
    if isinstance(value, list) and value and all(isinstance(item, dict) for item in value):
        # `vllm bench sweep` writes summary.json as a list of run objects.
        return [Document(item, item=index) for index, item in enumerate(value)]
    return [Document(value)]


def _json_lines(
    text: str, whole: json.JSONDecodeError, *, format: str | None, prefix: str
) -> list[Document]:
    lines = text.splitlines()
    first = next(index for index, line in enumerate(lines) if line.strip())
    try:
        first_value = _loads(lines[first], prefix)
    except json.JSONDecodeError:
        first_value = None
    if not isinstance(first_value, dict):
        summary = mlperf_summary(text)  # MLPerf LoadGen's mlperf_log_summary.txt
        if summary:
            return summary
        table = csv_documents(text)  # GenAI-Perf's or AIPerf's CSV export
        if table:
            return table
        table = guidellm_csv(text)  # guidellm's benchmarks.csv
        if table:
            return table
        printed = summary_documents(text)  # a console log of vLLM's or SGLang's benchmark
        if printed:
            return printed
        document = _yaml_document(text, prefix)
        if document is not None:
            return [document]
        header = _csv_header(text)
        if header:
            raise LoadTestFormatError(
                f"{prefix}a CSV whose columns this importer does not know (its header: "
                f"{header}); the CSVs it reads are GenAI-Perf's and AIPerf's profile exports and "
                "guidellm's benchmarks.csv" + ("" if format else f"; {expected()}")
            )
        # Not JSON lines or YAML either: report where the JSON itself broke.
        raise LoadTestFormatError(
            f"{prefix}not valid JSON: {whole.msg} (line {whole.lineno}, "
            f"column {whole.colno})" + ("" if format else f"; {expected()}")
        )
    fmt = format or _quiet_detect(first_value) or "load test"
    documents = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            value = _loads(line, prefix)
        except json.JSONDecodeError as exc:
            raise Ctx(fmt, line=number).error(
                f"not valid JSON: {exc.msg} (column {exc.colno})"
            ) from None
        if not isinstance(value, dict):
            raise Ctx(fmt, line=number).error(f"expected a JSON object, got a {json_type(value)}")
        documents.append(Document(value, line=number))
    return documents


def _csv_header(text: str, shown: int = 120) -> str | None:
    """The first row, cut to `shown` characters, when the text starts as a table of comma-
    separated values (a header and a row of its width, two columns or more); else None."""
    rows = [row for row in csv.reader(text.splitlines()[:20]) if any(cell.strip() for cell in row)]
    if len(rows) < 2 or len(rows[0]) < 2 or len(rows[1]) != len(rows[0]):
        return None
    header = ",".join(rows[0])
    return header if len(header) <= shown else header[:shown] + "..."


def detect_format(documents: list[Document], *, filename: str | None = None) -> LoadTestFormat:
    """The format whose signature the first document matches; the file name breaks ties.

    When none matches, the closest format (most signature keys present) gets to read the file:
    if it can, that is the format; if not, its complaint is the answer.
    """
    data = documents[0].data if documents else None
    if not isinstance(data, dict):
        raise LoadTestFormatError(
            f"could not detect the format (the JSON is a {json_type(data)}, "
            f"not an object): {expected()}"
        )
    matches = [fmt for fmt in formats() if fmt.matches(data)]
    if len(matches) > 1 and filename:
        name = filename.lower()
        hinted = [fmt for fmt in matches if any(hint in name for hint in fmt.filename_hints)]
        if len(hinted) == 1:
            return hinted[0]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise LoadTestFormatError(
            "could not detect the format: the content matches "
            f"{' and '.join(fmt.name for fmt in matches)}; pass the format explicitly"
        )
    return _closest(documents, data)


def _closest(documents: list[Document], data: dict) -> LoadTestFormat:
    scored = [(fmt.score(data), fmt) for fmt in formats()]
    best_score = max((score for score, _ in scored), default=0.0)
    if best_score == 0:
        for fmt in formats():
            if fmt.side_record_keys and all(key in data for key in fmt.side_record_keys):
                raise LoadTestFormatError(
                    f"could not detect the format: these look like {fmt.name}'s per-request "
                    f"records ({', '.join(fmt.side_files)}), which are not a run: upload the "
                    f"run's {fmt.run_file} (with them, in its folder, if you like)"
                )
        raise LoadTestFormatError(f"could not detect the format: {expected()}")
    closest = next(fmt for score, fmt in scored if score == best_score)
    missing = closest.missing(data)
    if missing:
        keys = ", ".join(repr(key) for key in missing)
        raise LoadTestFormatError(
            f"could not detect the format: looks like {closest.name}: missing {keys}"
        )
    try:
        closest.parse(documents)
    except LoadTestFormatError as exc:
        reason = str(exc).removeprefix(f"{closest.name}: ")
        raise LoadTestFormatError(
            f"could not detect the format: looks like {closest.name}: {reason}"
        ) from None
    return closest


def _quiet_detect(data: dict) -> str | None:
    matches = [fmt.name for fmt in formats() if fmt.matches(data)]
    return matches[0] if len(matches) == 1 else None
