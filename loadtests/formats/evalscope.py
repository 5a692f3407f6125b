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
"""

from __future__ import annotations

import json
import posixpath
import re
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
from .registry import LoadTestFormat, register

FORMAT = "evalscope"
RUN_KEY = "evalscope_perf_run"  # the joined document: {RUN_KEY: {summary, percentiles, args}}
SUMMARY_FILE = "benchmark_summary.json"
PERCENTILE_FILE = "benchmark_percentile.json"
ARGS_FILE = "benchmark_args.json"
# A run folder's other files: per-request SQLite (pickled responses), timelines, reports, logs;
# the arguments alone (a folder whose run failed writes no summary).
SIDE_FILES = (
    "benchmark_data.db",
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
                f"are 0 {zeros}): a time it failed to take, so TTFT percentiles read low and "
                "those requests' TPOT (latency over tokens) high; the zeros are left out"
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


def join_run_folder(files: Sequence[tuple[bytes, str | None]]) -> list[tuple[bytes, str | None]]:
    """`files` with each folder's `benchmark_summary.json` and `benchmark_percentile.json` (and
    `benchmark_args.json`) made into one document named after the folder, which `parse` reads.
    Files named with no folder (a browser's upload) are one folder. Other files pass unchanged
    (a results folder's side files were skipped before: `SIDE_FILES`).
    The joined document is canonical JSON, so a folder imported twice, from any archive, is
    one file (one digest)."""
    folders: dict[str, dict[str, tuple[bytes, str | None]]] = {}
    for content, name in files:
        base = posixpath.basename(name or "")
        if base in (SUMMARY_FILE, PERCENTILE_FILE, ARGS_FILE):
            folders.setdefault(posixpath.dirname(name or ""), {})[base] = (content, name)
    out: list[tuple[bytes, str | None]] = []
    joined: set[str] = set()
    for folder, found in folders.items():
        if SUMMARY_FILE not in found or PERCENTILE_FILE not in found:
            continue
        started = next((part for part in folder.split("/") if _STARTED.match(part)), None)
        document = {
            RUN_KEY: {
                "summary": _json(found[SUMMARY_FILE]),
                "percentiles": _json(found[PERCENTILE_FILE]),
                **({"args": _json(found[ARGS_FILE])} if ARGS_FILE in found else {}),
                **({"started": started} if started else {}),
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
    )
)
