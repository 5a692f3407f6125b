"""ModelScope evalscope `perf` runs. evalscope writes each load level to a folder of its own
(`parallel_<c>_number_<n>/` for a concurrency, `rate_<r>_number_<n>/` for an open-loop rate)
holding, among others:

- `benchmark_summary.json`: counts, duration, throughputs and means, keyed by display names
  ("Test Duration (s)", "Concurrency", "Output Throughput (tok/s)"; before 1.6 "Time taken for
  tests (s)", "Number of concurrency", "Output token throughput (tok/s)");
- `benchmark_percentile.json`: a list of rows, one per percentile ("Percentiles": "50%"), each
  with "Latency (s)", "TTFT (ms)", "TPOT (ms)" (before 1.6: "TTFT (s)", "TPOT (s)");
- `benchmark_args.json`: the command's arguments (model, URL, stream, dataset, ...).

Neither data file is a run by itself: the summary has no percentile, the percentile table no
load. `join_run_folder` (used on import) makes one document of a folder's files, and that is
what `parse` reads; either file alone is refused with the way to import it. evalscope measures
on the client's clock: TTFT to the first streamed chunk, TPOT as (latency - TTFT) / (output
tokens - 1) per request, its percentiles nearest-rank over the successful requests (no P99.9).
A request that did not stream has its whole latency written as TTFT and 0 as TPOT.

A folder's `benchmark_data.db` (SQLite, one row a request), when it comes with the folder, gives
the run's per-request TTFT, TPOT, inter-token gaps and latency (`ParsedRun.samples`: the
distributions the gate compares). Only its numeric columns are read, from the file in memory
(`read_request_rows`); the requests' and responses' text (Python pickles) is never touched.
The figures stored stay the percentile file's, so a folder imported with and without its
database is one run.
"""

from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Sequence
from datetime import UTC, datetime

from .base import (
    Ctx,
    Document,
    FieldRecorder,
    LoadTestFormatError,
    ParsedRun,
    mark_failed,
    present,
    rate_label,
    ratio_or_none,
    single_object,
)
from .detect import decode, parse_json
from .folders import by_folder
from .registry import LoadTestFormat, register

FORMAT = "evalscope"
RUN_KEY = "evalscope_perf_run"  # the joined document: {RUN_KEY: {summary, percentiles, args}}
SUMMARY_FILE = "benchmark_summary.json"
PERCENTILE_FILE = "benchmark_percentile.json"
ARGS_FILE = "benchmark_args.json"
DATA_FILE = "benchmark_data.db"  # per-request rows (SQLite), read with its folder
# A run folder's other files: timelines, reports, logs.
SIDE_FILES = (
    "workload_throughput.json",
    "workload_timeline.json",
    "trace_summary.json",
    "speed_benchmark.json",
    "performance_summary.txt",
    "perf_report.html",
    "benchmark.log",
)

# PerfHub's name -> evalscope's summary keys, newest first.
SUMMARY_KEYS = {
    "duration": ("Test Duration (s)", "Time taken for tests (s)"),
    "concurrency": ("Concurrency", "Number of concurrency"),
    "rate": ("Request Rate (req/s)", "Request rate (req/s)"),
    "total": ("Total Requests", "Total requests"),
    "succeeded": ("Success Requests", "Succeed requests"),
    "failed": ("Failed Requests", "Failed requests"),
    "streamed": ("Stream Requests",),
    "qps": ("Req Throughput (req/s)", "Request throughput (req/s)"),
    "output_tps": ("Output Throughput (tok/s)", "Output token throughput (tok/s)"),
    "total_tps": ("Total Throughput (tok/s)", "Total token throughput (tok/s)"),
    "prompt_tokens": ("Avg Input Tokens", "Average input tokens per request"),
    "output_tokens": ("Avg Output Tokens", "Average output tokens per request"),
}
# PerfHub's metric -> (column, scale to ms), newest first.
LATENCY_COLUMNS = {
    "e2e": (("Latency (s)", 1000.0),),
    "ttft": (("TTFT (ms)", 1.0), ("TTFT (s)", 1000.0)),
    "tpot": (("TPOT (ms)", 1.0), ("TPOT (s)", 1000.0)),
}
PERCENTILE_ROWS = {"p50": "50%", "p90": "90%", "p95": "95%", "p99": "99%"}
_LABEL = re.compile(r"^(\d+(?:\.\d+)?)%$")
# evalscope's output folder is named for the local time the command started (`%Y%m%d_%H%M%S`).
_STARTED = re.compile(r"^\d{8}_\d{6}$")


def looks_like(data: dict) -> bool:
    if RUN_KEY in data or _is_arguments(data):
        return True
    if "Percentiles" in data and any(column in data for column in ("Latency (s)", "TTFT (ms)")):
        return True
    return any(key in data for key in SUMMARY_KEYS["duration"]) and any(
        key in data for key in SUMMARY_KEYS["succeeded"]
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    first = documents[0].data if documents else None
    if isinstance(first, dict) and "Percentiles" in first:
        raise LoadTestFormatError(
            f"{FORMAT}: this is {PERCENTILE_FILE}, which names no load: import it together "
            f"with {SUMMARY_FILE} from the same folder (both files in one upload, or the "
            "folder as .zip or .tar.gz)"
        )
    data = single_object(FORMAT, documents)
    if _is_arguments(data):
        raise LoadTestFormatError(
            f"{FORMAT}: this is {ARGS_FILE}, the run's arguments: import the folder's "
            f"{SUMMARY_FILE} and {PERCENTILE_FILE} (with it, or without)"
        )
    if RUN_KEY not in data:
        raise LoadTestFormatError(
            f"{FORMAT}: this is {SUMMARY_FILE}, which holds means only: import it together "
            f"with {PERCENTILE_FILE} from the same folder (both files in one upload, or the "
            "folder as .zip or .tar.gz)"
        )
    ctx = Ctx(FORMAT).at(RUN_KEY)
    run = ctx.obj(data, RUN_KEY)
    summary = ctx.obj(run, "summary")
    rows = ctx.array(run, "percentiles")
    args = ctx.obj(run, "args", required=False) or {}
    parsed = _run(summary, rows, args)
    requests = ctx.obj(run, "requests", required=False)
    if requests is not None and not parsed.failed:
        _add_samples(ctx.at("requests"), requests, parsed)
    started = run.get("started")
    if isinstance(started, str) and _STARTED.match(started):
        try:
            parsed.measured_at = datetime.strptime(started, "%Y%m%d_%H%M%S").replace(tzinfo=UTC)
        except ValueError:
            raise ctx.at("started").error(f"not a time: {started!r}") from None
        parsed.sources["measured_at"] = (
            f"the output folder's name {started} (the command's start, local time of the "
            "client, read as UTC)"
        )
    return [parsed]


def _run(summary: dict, rows: list, args: dict) -> ParsedRun:
    # Errors name the tool's file and key, not the joined document's.
    sctx = Ctx(f"{FORMAT}: {SUMMARY_FILE}")
    recorder = FieldRecorder()
    put, fields = recorder.put, recorder.fields
    notes: list[str] = []

    def value(name: str, *, integer: bool = False, negative_ok: bool = False):
        key = next((k for k in SUMMARY_KEYS[name] if k in summary), None)
        if key is None:
            return None, None
        number = sctx.num(summary, key, negative_ok=negative_ok)
        if integer and number is not None:
            if number != int(number):
                raise sctx.at(key).error(f"expected a whole number, got {number!r}")
            number = int(number)
        return number, key

    succeeded, succeeded_key = value("succeeded", integer=True)
    if succeeded is None:
        raise sctx.error(f"missing key {SUMMARY_KEYS['succeeded'][0]!r}")
    put("request_count", succeeded, _in_summary(succeeded_key))
    duration, key = value("duration")
    put("duration_s", duration, _in_summary(key))
    qps, key = value("qps")
    put("qps", qps, _in_summary(key))
    output_tps, output_key = value("output_tps")
    put("output_tps", output_tps, _in_summary(output_key))
    total_tps, total_key = value("total_tps")
    if total_tps is not None and output_tps is not None and total_tps >= output_tps:
        put(
            "input_tps",
            total_tps - output_tps,
            f"{_in_summary(total_key)} - {output_key!r} (derived)",
        )
    prompt, key = value("prompt_tokens")
    put("prompt_tokens_mean", prompt, _in_summary(key))
    output, key = value("output_tokens")
    put("output_tokens_mean", output, _in_summary(key))

    # evalscope writes -1 for the dimension a run did not set: a closed loop has no rate.
    concurrency, ckey = value("concurrency", integer=True, negative_ok=True)
    rate, rkey = value("rate", negative_ok=True)
    concurrency = concurrency if concurrency is not None and concurrency > 0 else None
    rate = rate if rate is not None and rate > 0 else None
    put("concurrency", concurrency, _in_summary(ckey))
    put("request_rate", rate, _in_summary(rkey))
    rate_inf = rate is None and concurrency is not None

    streamed, _ = value("streamed", integer=True)
    stream_arg = args.get("stream")
    table = _percentile_table(Ctx(f"{FORMAT}: {PERCENTILE_FILE}"), rows)
    tpot = next((table[c] for c, _ in LATENCY_COLUMNS["tpot"] if c in table), None)
    # Before 1.5 the summary did not count streamed requests: a TPOT of 0 throughout says it.
    not_streamed = (
        streamed == 0
        or (streamed is None and stream_arg is False)
        or (streamed is None and bool(tpot) and not any(tpot.values()))
    )
    _latencies(table, recorder, metrics=("e2e",) if not_streamed else tuple(LATENCY_COLUMNS))
    if not_streamed and succeeded:
        notes.append(
            "no TTFT or TPOT: the run did not stream (evalscope writes a whole answer's "
            "latency as its TTFT, and 0 as its TPOT)"
        )
    elif succeeded:
        zeros = _zero_ttft_rows(table)
        if zeros:
            notes.append(
                f"evalscope wrote a TTFT of 0 for some streamed requests (its percentile rows "
                f"are 0 {zeros}): requests it timed no chunk of, so its TTFT percentiles read "
                "low and its TPOT (latency over tokens for them) high; the zero rows are left "
                "out"
            )

    failed, failed_key = value("failed", integer=True)
    total, _ = value("total", integer=True)
    if failed is None and total is not None:
        failed = max(total - succeeded, 0)
    errors = failed
    sources = recorder.sources
    if failed is not None:
        sources["errors"] = _in_summary(failed_key or "Total Requests - Success Requests")
    if qps is None:
        put("qps", ratio_or_none(succeeded, duration), "successes / duration (derived)")
    extra = {
        "model": args.get("model") if isinstance(args.get("model"), str) else None,
        "api": args.get("api") if isinstance(args.get("api"), str) else None,
        "dataset": args.get("dataset") if isinstance(args.get("dataset"), str) else None,
        "requests_sent": total,
        "means": {
            key: summary[key]
            for key in summary
            if key.startswith(("Avg ", "Average ")) and isinstance(summary[key], int | float)
        },
        "notes": notes,
    }
    parsed = ParsedRun(
        format=FORMAT,
        tool_version=None,  # evalscope writes no version into its files
        label=f"evalscope {rate_label(concurrency, rate, rate_inf) or 'run'}",
        measured_at=None,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=errors,
        extra=present(extra),
        sources=sources,
    )
    return mark_failed(parsed)


def _in_summary(key: str | None) -> str:
    return f"{SUMMARY_FILE} {key!r}"


def _latencies(
    table: dict[str, dict[str, float]], recorder: FieldRecorder, *, metrics: tuple[str, ...]
) -> None:
    """The percentile rows PerfHub stores (P50 to P99) of each metric's column, in ms."""
    for metric in metrics:
        column = next((c for c in LATENCY_COLUMNS[metric] if c[0] in table), None)
        if column is None:
            continue
        name, scale = column
        for label, row_label in PERCENTILE_ROWS.items():
            found = table[name].get(row_label)
            if found is None or (metric != "e2e" and found == 0):
                continue  # a TTFT or TPOT of 0 is evalscope's placeholder, not a time
            recorder.put(
                f"{metric}_{label}_ms", found * scale, f"{PERCENTILE_FILE} {row_label} {name!r}"
            )


def _is_arguments(data: dict) -> bool:
    return all(key in data for key in ("parallel", "number", "api", "url", "dataset"))


def _percentile_table(ctx: Ctx, rows: list) -> dict[str, dict[str, float]]:
    """column -> {"50%": value, ...}: the rows' numbers, validated; "min"/"max" kept by name."""
    table: dict[str, dict[str, float]] = {}
    for index, row in enumerate(rows):
        rctx = ctx.at(index)
        if not isinstance(row, dict):
            raise rctx.error("expected an object")
        label = row.get("Percentiles")
        if not isinstance(label, str) or not (_LABEL.match(label) or label in ("min", "max")):
            raise rctx.at("Percentiles").error(f"expected a label like '99%', got {label!r}")
        for column, cell in row.items():
            if column == "Percentiles":
                continue
            number = rctx.at(column).number(cell)
            if number is not None:
                table.setdefault(column, {})[label] = number
    return table


def _zero_ttft_rows(table: dict[str, dict[str, float]]) -> str | None:
    """How far evalscope's TTFT rows of 0 reach ("up to P10", "at the minimum"), or None."""
    column = next((c for c, _ in LATENCY_COLUMNS["ttft"] if c in table), None)
    if column is None:
        return None
    zeros = [label for label, value in table[column].items() if value == 0 and label != "max"]
    if not zeros:
        return None
    highest = max(zeros, key=lambda label: -1.0 if label == "min" else _percent(label))
    return "at the minimum" if highest == "min" else f"up to P{highest.removesuffix('%')}"


def _percent(label: str) -> float:
    match = _LABEL.match(label)
    return float(match.group(1)) if match else 0.0


# The columns read from benchmark_data.db's `result` table (evalscope 1.x); `is_stream` and
# `inter_token_latencies` are newer than the others and optional.
DB_COLUMNS = ("success", "latency", "first_chunk_latency", "completion_tokens")
DB_OPTIONAL = ("is_stream", "inter_token_latencies")
MAX_DB_ROWS = 1_000_000
MAX_DB_STEPS = 200_000_000  # SQLite VM steps: a query past this is a hostile file, not a run
MAX_DB_VALUE = 4_000_000  # bytes of one value (a request's list of gaps)
SQLITE_MAGIC = b"SQLite format 3\x00"


def read_request_rows(content: bytes, name: str | None) -> dict:
    """{"columns": [...], "rows": [[...], ...]}: the numeric columns of the `result` table of an
    evalscope `benchmark_data.db`, one row a request, in the order they were stored.

    The file comes from an upload, so it is opened in memory (never written to disk), with the
    schema untrusted (`trusted_schema=OFF`: no function a view or trigger names runs), every
    page's cells checked, values and run time bounded, and only a real table named `result`
    read. LoadTestFormatError names the file when it is not such a database."""
    label = name or DATA_FILE
    if not content.startswith(SQLITE_MAGIC):
        raise LoadTestFormatError(f"{FORMAT}: {label}: not an SQLite database")
    connection = sqlite3.connect(":memory:")
    # Text that is not UTF-8 (a damaged page) reads with replacement characters, not an error.
    connection.text_factory = lambda raw: raw.decode("utf-8", "replace")
    steps = [0]

    def interrupt() -> int:
        steps[0] += 1
        return 1 if steps[0] * 1000 > MAX_DB_STEPS else 0

    try:
        connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_DB_VALUE)
        connection.deserialize(content)
        connection.execute("PRAGMA trusted_schema = OFF")
        connection.execute("PRAGMA cell_size_check = ON")
        connection.execute("PRAGMA query_only = ON")
        connection.set_progress_handler(interrupt, 1000)
        kind = connection.execute("SELECT type FROM sqlite_master WHERE name = 'result'").fetchone()
        if kind is None or kind[0] != "table":
            raise LoadTestFormatError(f"{FORMAT}: {label}: no table named 'result'")
        present = {row[1] for row in connection.execute("PRAGMA table_info(result)")}
        missing = [column for column in DB_COLUMNS if column not in present]
        if missing:
            raise LoadTestFormatError(
                f"{FORMAT}: {label}: table 'result' lacks {', '.join(missing)}"
            )
        columns = [*DB_COLUMNS, *(c for c in DB_OPTIONAL if c in present)]
        cursor = connection.execute(
            f"SELECT {', '.join(columns)} FROM result ORDER BY rowid"  # names from DB_COLUMNS
        )
        rows = cursor.fetchmany(MAX_DB_ROWS + 1)
    except sqlite3.Error as exc:
        raise LoadTestFormatError(f"{FORMAT}: {label}: not a readable database ({exc})") from None
    except UnicodeDecodeError:  # SQLite's own message quoting a damaged schema
        raise LoadTestFormatError(f"{FORMAT}: {label}: not a readable database") from None
    finally:
        connection.close()
    if len(rows) > MAX_DB_ROWS:
        raise LoadTestFormatError(f"{FORMAT}: {label}: more than {MAX_DB_ROWS:,} requests")
    for index, row in enumerate(rows):
        for column, value in zip(columns, row, strict=True):
            if isinstance(value, bytes):
                raise LoadTestFormatError(
                    f"{FORMAT}: {label}: request {index + 1}: {column} holds binary data"
                )
    return {"columns": columns, "rows": [list(row) for row in rows]}


def _add_samples(ctx: Ctx, requests: dict, parsed: ParsedRun) -> None:
    """Per-request samples (ms) of the successful requests: E2E for all; TTFT, TPOT and the
    gaps between chunks for those that streamed and whose chunks evalscope timed."""
    columns = ctx.array(requests, "columns")
    rows = ctx.array(requests, "rows")
    if not all(isinstance(c, str) for c in columns) or not set(DB_COLUMNS) <= set(columns):
        raise ctx.at("columns").error(f"expected the columns {', '.join(DB_COLUMNS)}")
    at = {column: i for i, column in enumerate(columns)}
    samples: dict[str, list[float]] = {"ttft": [], "tpot": [], "itl": [], "e2e": []}
    succeeded = untimed = 0
    streamed_run = (
        parsed.fields["ttft_p50_ms"] is not None or parsed.fields["ttft_p99_ms"] is not None
    )
    for index, row in enumerate(rows):
        rctx = Ctx(f"{FORMAT}: {DATA_FILE}", f"request {index + 1}")
        if not isinstance(row, list) or len(row) != len(columns):
            raise rctx.error("expected one value per column")
        if not row[at["success"]]:
            continue
        succeeded += 1
        latency = rctx.at("latency").number(row[at["latency"]])
        if latency is None:
            raise rctx.at("latency").error("missing for a successful request")
        samples["e2e"].append(latency * 1000)
        stream = row[at["is_stream"]] if "is_stream" in at else streamed_run
        if not stream or not streamed_run:
            continue
        gaps = (
            _gaps(rctx, row[at["inter_token_latencies"]]) if "inter_token_latencies" in at else None
        )
        ttft = rctx.at("first_chunk_latency").number(row[at["first_chunk_latency"]])
        if not ttft or gaps == []:
            untimed += 1  # no chunk timed: evalscope leaves its TTFT at 0
            continue
        samples["ttft"].append(ttft * 1000)
        tokens = rctx.at("completion_tokens").number(row[at["completion_tokens"]])
        if tokens is not None and tokens > 1 and latency >= ttft:
            samples["tpot"].append((latency - ttft) * 1000 / (tokens - 1))
        samples["itl"].extend(gap * 1000 for gap in gaps or ())
    expected = parsed.fields["request_count"]
    if expected is not None and succeeded != expected:
        raise LoadTestFormatError(
            f"{FORMAT}: {DATA_FILE} holds {succeeded} successful requests where {SUMMARY_FILE} "
            f"counts {int(expected)}: not the same run"
        )
    parsed.samples = {family: values for family, values in samples.items() if values}
    if untimed:
        parsed.extra.setdefault("notes", []).append(
            f"{DATA_FILE}: {untimed} of {succeeded} streamed requests have no chunk timed "
            "(evalscope recorded no chunk times for them and writes their TTFT as 0): they are "
            "left out of the per-request TTFT and TPOT"
        )


def _gaps(ctx: Ctx, value: object) -> list[float] | None:
    """A request's gaps between chunks (s) from the JSON list evalscope stores."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ctx.at("inter_token_latencies").error("expected a JSON list")
    try:
        gaps = parse_json(value)
    except (LoadTestFormatError, ValueError):
        raise ctx.at("inter_token_latencies").error("expected a JSON list") from None
    if not isinstance(gaps, list):
        raise ctx.at("inter_token_latencies").error("expected a JSON list")
    out = []
    for i, gap in enumerate(gaps):
        number = ctx.at("inter_token_latencies").at(i).number(gap)
        if number is not None and math.isfinite(number):
            out.append(number)
    return out


def join_run_folder(files: Sequence[tuple[bytes, str | None]]) -> list[tuple[bytes, str | None]]:
    """`files` with each folder's `benchmark_summary.json` and `benchmark_percentile.json` (and
    `benchmark_args.json`) made into one document named after the folder, which `parse` reads.
    Files named with no folder (a browser's upload) are one folder. Other files pass unchanged
    (a results folder's side files were skipped before: `SIDE_FILES`).
    The joined document is canonical JSON, so a folder imported twice, from any archive, is
    one file (one digest)."""
    folders = by_folder(files, (SUMMARY_FILE, PERCENTILE_FILE, ARGS_FILE, DATA_FILE))
    out: list[tuple[bytes, str | None]] = []
    joined: set[str] = set()
    for folder, found in folders.items():
        if SUMMARY_FILE not in found or PERCENTILE_FILE not in found:
            if DATA_FILE in found:
                raise LoadTestFormatError(
                    f"{FORMAT}: {found[DATA_FILE][1] or DATA_FILE}: evalscope's per-request "
                    f"database is read with its folder's {SUMMARY_FILE} and {PERCENTILE_FILE}, "
                    "which are not beside it"
                )
            continue
        started = next((part for part in folder.split("/") if _STARTED.match(part)), None)
        document = {
            RUN_KEY: {
                "summary": _json(found[SUMMARY_FILE]),
                "percentiles": _json(found[PERCENTILE_FILE]),
                **({"args": _json(found[ARGS_FILE])} if ARGS_FILE in found else {}),
                **({"started": started} if started else {}),
                **(
                    {"requests": read_request_rows(*found[DATA_FILE])} if DATA_FILE in found else {}
                ),
            }
        }
        content = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        label = folder or f"{SUMMARY_FILE} + {PERCENTILE_FILE}"
        out.append((content, label))
        joined.update(name for _, name in found.values() if name is not None)
    out += [(content, name) for content, name in files if name is None or name not in joined]
    return out


def _json(file: tuple[bytes, str | None]) -> object:
    content, name = file
    try:
        return parse_json(decode(content))
    except (LoadTestFormatError, ValueError) as exc:
        raise LoadTestFormatError(f"{FORMAT}: {name}: not valid JSON ({exc})") from None


register(
    LoadTestFormat(
        name=FORMAT,
        priority=48,
        label="evalscope perf (ModelScope)",
        parse=parse,
        looks_like=looks_like,
        signature=(
            RUN_KEY,
            "Test Duration (s)",
            "Time taken for tests (s)",
            "Percentiles",
            "Success Requests",
            "Succeed requests",
        ),
        filename_hints=("benchmark_summary", "benchmark_percentile", "evalscope"),
        side_files=SIDE_FILES,
        companion_files=(DATA_FILE,),
        join_folder=join_run_folder,
    )
)
