"""guidellm's CSV export (`--output kind=csv`, `benchmarks.csv`), read as the report it mirrors.

guidellm 0.8 writes one row per benchmark under a header of three rows: a group ("Request
Latency"), a field ("Successful Sec") and a statistic ("Mean", "Median", "Std Dev",
"Percentiles"); each distribution's "Percentiles" cell is a list of eleven numbers, [min, p001,
p01, p05, p10, p25, p75, p90, p95, p99, max] (no p50: "Median" is it; no p999). Numbers are
Python's own repr, so the figures are the JSON report's to the last digit.

Each row becomes the benchmark the JSON report holds (`metrics.<key>.successful`, `config.strategy`,
`duration`, `start_time`), so the `guidellm` format reads the CSV with the JSON's rules, and
`csv_sources` renames the sources after the CSV's columns. What the CSV does not hold: P99.9, the
requests' own records (no per-request samples), guidellm's warnings, and a start time finer than
a second: "Measure Start Time" is the benchmark's start (the JSON's `start_time`) written as
`%Y-%m-%d %H:%M:%S` in the client machine's local time, with no zone, so it is read as UTC as
vLLM's `date` is. A constant or Poisson rate is written to two decimals ("constant@4.00").
The token totals are not written: a total is the mean times the successful requests.
"""

from __future__ import annotations

import csv
import json
import re
from datetime import UTC, datetime
from typing import Any

from .base import Ctx, Document, LoadTestFormatError

FORMAT = "guidellm"
HEADER_ROWS = 3
FIRST_CELLS = ("Run Info", "Run ID")
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
# The eleven values of a "Percentiles" cell, in order.
PERCENTILE_CELLS = ("min", "p001", "p01", "p05", "p10", "p25", "p75", "p90", "p95", "p99", "max")
STATS = {"Mean": "mean", "Median": "median", "Std Dev": "std_dev"}
# JSON metric key -> (group, field) of its successful requests' columns.
METRICS = {
    "request_latency": ("Request Latency", "Successful Sec"),
    "time_to_first_token_ms": ("Time to First Token", "Successful ms"),
    "inter_token_latency_ms": ("Inter Token Latency", "Successful ms"),
    "time_per_output_token_ms": ("Time per Output Token", "Successful ms"),
    "request_concurrency": ("Server Throughput", "Successful Concurrency"),
    "requests_per_second": ("Server Throughput", "Successful Requests/Sec"),
    "prompt_tokens_per_second": ("Token Throughput", "Successful Input Tokens/Sec"),
    "output_tokens_per_second": ("Token Throughput", "Successful Output Tokens/Sec"),
    "tokens_per_second": ("Token Throughput", "Successful Total Tokens/Sec"),
    "prompt_token_count": ("Token Metrics", "Successful Input Tokens"),
    "output_token_count": ("Token Metrics", "Successful Output Tokens"),
}
TOKEN_COUNTS = ("prompt_token_count", "output_token_count")
STATUSES = ("successful", "errored", "incomplete", "total")
START = ("Timings", "Measure Start Time", "")
DURATION = ("Timings", "Duration", "Sec")
STRATEGY = ("Benchmark", "Strategy", "")
# "concurrent@4", "constant@4.00", "throughput@512", "throughput@unlimited", "synchronous"
STRATEGY_TEXT = re.compile(r"^(?P<kind>[a-z_]+)(?:@(?P<value>[^@\s]+))?$")


def looks_like_csv(text: str) -> bool:
    """True when the first two lines start as guidellm's header does ("Run Info", "Run ID")."""
    lines = [line for line in text.splitlines()[:2]]
    return len(lines) == 2 and all(
        line.split(",", 1)[0].strip() == cell for line, cell in zip(lines, FIRST_CELLS, strict=True)
    )


def csv_documents(text: str) -> list[Document] | None:
    """The guidellm report the CSV mirrors, as one document, or None when the text is not
    guidellm's CSV. A row or cell that cannot be read raises LoadTestFormatError naming its
    line (and column)."""
    if not looks_like_csv(text):
        return None
    reader = csv.reader(text.splitlines())
    try:
        rows = [(reader.line_num, row) for row in reader]
    except csv.Error as exc:
        raise Ctx(FORMAT, line=reader.line_num + 1).error(
            f"not a readable CSV row: {exc}"
        ) from None
    if len(rows) < HEADER_ROWS:
        raise LoadTestFormatError(f"{FORMAT}: the CSV ends inside its three header rows")
    width = len(rows[0][1])
    for line, row in rows[:HEADER_ROWS]:
        if len(row) != width:
            raise Ctx(FORMAT, line=line).error(
                f"expected {width} cells as in the first header row, got {len(row)}"
            )
    columns = [
        tuple(cell.strip() for cell in cells)
        for cells in zip(*(r for _, r in rows[:HEADER_ROWS]), strict=True)
    ]
    benchmarks, metadata, config = [], {}, {}
    for line, row in rows[HEADER_ROWS:]:
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != width:
            raise Ctx(FORMAT, line=line).error(
                f"expected {width} cells as in the header rows, got {len(row)}"
            )
        cells = _Row(line, columns, row)
        benchmarks.append(_benchmark(cells))
        metadata = metadata or cells.json(("Runtime Info", "Metadata", ""))
        config = config or cells.json(("Runtime Info", "Arguments", ""))
    if not benchmarks:
        raise LoadTestFormatError(f"{FORMAT}: the CSV has its header rows but no benchmark rows")
    data: dict[str, Any] = {"metadata": metadata, "benchmarks": benchmarks}
    if config:
        data["config"] = config
    return [Document(data, origin="csv")]


class _Row:
    """One benchmark's cells by (group, field, statistic), each read naming its line and column."""

    def __init__(self, line: int, columns: list[tuple[str, ...]], row: list[str]) -> None:
        self.line = line
        self.index = {column: i for i, column in reversed(list(enumerate(columns)))}
        self.row = row

    def text(self, column: tuple[str, str, str]) -> str | None:
        i = self.index.get(column)
        if i is None:
            return None
        value = self.row[i].strip()
        return None if value in ("", "N/A") else value

    def ctx(self, column: tuple[str, str, str]) -> Ctx:
        where = " | ".join(part for part in column if part)
        return Ctx(FORMAT, f'column {self.index[column] + 1} ("{where}")', line=self.line)

    def number(self, column: tuple[str, str, str]) -> float | None:
        value = self.text(column)
        return None if value is None else self.ctx(column).number(value)

    def integer(self, column: tuple[str, str, str]) -> int | None:
        value = self.number(column)
        if value is not None and value != int(value):
            raise self.ctx(column).error(f"expected a whole number, got {value!r}")
        return None if value is None else int(value)

    def numbers(self, column: tuple[str, str, str]) -> list[float | None] | None:
        value = self.text(column)
        if value is None:
            return None
        ctx = self.ctx(column)
        if not (value.startswith("[") and value.endswith("]")):
            raise ctx.error(f"expected a list of numbers in brackets, got {value[:40]!r}")
        items = [item.strip() for item in value[1:-1].split(",")]
        if len(items) != len(PERCENTILE_CELLS):
            raise ctx.error(
                f"expected {len(PERCENTILE_CELLS)} numbers (min, p001 ... p99, max), "
                f"got {len(items)}"
            )
        return [
            ctx.at(name).number(item) for name, item in zip(PERCENTILE_CELLS, items, strict=True)
        ]

    def json(self, column: tuple[str, str, str]) -> dict:
        value = self.text(column)
        if value is None:
            return {}
        try:
            parsed = json.loads(value)
        except ValueError:
            raise self.ctx(column).error("expected a JSON object") from None
        return parsed if isinstance(parsed, dict) else {}


def _benchmark(row: _Row) -> dict:
    metrics: dict[str, Any] = {}
    totals = {s: row.integer(("Request Counts", s.capitalize(), "")) for s in STATUSES}
    metrics["request_totals"] = {s: n for s, n in totals.items() if n is not None}
    successful = totals["successful"]
    for key, (group, field) in METRICS.items():
        summary = _distribution(row, group, field)
        if not summary:
            continue
        if key in TOKEN_COUNTS and successful is not None and "mean" in summary:
            summary["count"] = successful
            summary["total_sum"] = summary["mean"] * successful
        metrics[key] = {"successful": summary}
    benchmark: dict[str, Any] = {"metrics": metrics}
    config: dict[str, Any] = {}
    if (strategy := _strategy(row)) is not None:
        config["strategy"] = strategy
    for key, column in (("id_", ("Benchmark", "ID", "")), ("run_id", ("Run Info", "Run ID", ""))):
        if (value := row.text(column)) is not None:
            config[key] = value
    benchmark["config"] = config
    if (duration := row.number(DURATION)) is not None:
        benchmark["duration"] = duration
    if (start := _start(row)) is not None:
        benchmark["start_time"] = start
    return benchmark


def _distribution(row: _Row, group: str, field: str) -> dict:
    summary: dict[str, Any] = {}
    for label, stat in STATS.items():
        value = row.number((group, field, label))
        if value is not None:
            summary[stat] = value
    values = row.numbers((group, field, "Percentiles"))
    if values is not None:
        named = dict(zip(PERCENTILE_CELLS, values, strict=True))
        summary["min"], summary["max"] = named.pop("min"), named.pop("max")
        summary["percentiles"] = {k: v for k, v in named.items() if v is not None}
    return {k: v for k, v in summary.items() if v is not None}


def _strategy(row: _Row) -> dict | None:
    """`config.strategy` from "Benchmark | Strategy" (`str()` of guidellm's strategy)."""
    text = row.text(STRATEGY)
    if text is None:
        return None
    match = STRATEGY_TEXT.match(text)
    if not match:
        raise row.ctx(STRATEGY).error(
            f"expected a strategy such as 'concurrent@4' or 'constant@2.00', got {text[:40]!r}"
        )
    kind, value = match["kind"], match["value"]
    ctx = row.ctx(STRATEGY)
    if kind == "synchronous":
        return {"type_": kind}
    if kind == "concurrent":
        return {"type_": kind, "streams": ctx.number(value)}
    if kind == "throughput":
        return {
            "type_": kind,
            "max_concurrency": None if value == "unlimited" else ctx.number(value),
        }
    if kind in ("constant", "poisson"):
        return {"type_": kind, "rate": ctx.number(value)}
    return None  # a trace replay or another schedule: no load PerfHub can name


def _start(row: _Row) -> float | None:
    """Unix seconds of "Timings | Measure Start Time", its zone-less local time read as UTC."""
    text = row.text(START)
    if text is None:
        return None
    try:
        when = datetime.strptime(text, TIME_FORMAT)
    except ValueError:
        raise row.ctx(START).error(
            f"expected a time such as '2026-12-07 14:19:08', got {text[:40]!r}"
        ) from None
    return when.replace(tzinfo=UTC).timestamp()


# The JSON report's keys in a run's sources, as the CSV's columns.
_METRIC_SOURCE = re.compile(r"metrics\.(\w+)\.successful\.(percentiles\.(\w+)|\w+)")
_TOTALS_SOURCE = re.compile(r"metrics\.request_totals(?:\.(\w+))?")


def csv_sources(sources: dict[str, str]) -> dict[str, str]:
    """A run's sources, read from the CSV, named after its columns instead of the JSON's keys."""
    return {name: _csv_source(text) for name, text in sources.items()}


def _csv_source(text: str) -> str:
    def metric(match: re.Match) -> str:
        group, field = METRICS.get(match[1], (match[1], "Successful"))
        if match[3]:
            return f'"{group} | {field} | Percentiles" ({match[3]})'
        if match[2] == "total_sum":
            return f'"{group} | {field} | Mean" x "Request Counts | Successful"'
        stat = {v: k for k, v in STATS.items()}.get(match[2], match[2])
        return f'"{group} | {field} | {stat}"'

    text = _METRIC_SOURCE.sub(metric, text)
    text = _TOTALS_SOURCE.sub(lambda m: f'"Request Counts | {(m[1] or "").capitalize()}"', text)
    text = re.sub(r"config\.strategy[\w.]*", '"Benchmark | Strategy"', text)
    text = text.replace("duration (s)", '"Timings | Duration | Sec"')
    return text.replace(
        "start_time (Unix seconds)",
        '"Timings | Measure Start Time" (the client\'s local time, to the second, read as UTC)',
    )
