"""MLPerf Inference results: the `mlperf_log_summary.txt` MLCommons' LoadGen writes for every run,
the file of every published submission (`closed/<submitter>/results/<system>/<benchmark>/
<scenario>/performance/run_1/`). A text of `Key : value` lines in three blocks: the result
(scenario, throughput, VALID or INVALID and why), "Additional Stats" (latency percentiles in
nanoseconds; for the LLM benchmarks also TTFT and TPOT), and the test parameters.

LoadGen measures on its own clock, from issuing a sample to the SUT's completion: the whole
latency (E2E), the first token (TTFT) and, per sample, (latency - TTFT) / (tokens - 1) (TPOT;
a sample's mean is its latency less TTFT over its tokens: checked on a published run, where the
mean TPOT, latency and TTFT give the tokens a sample that the token rate over the sample rate
gives). Its percentiles are nearest-rank over every sample. The load is the scenario's:

- Server: samples arrive one at a time at `target_qps` (Poisson): an open loop at that rate;
- Offline: every sample in one query at once (`samples_per_query`): a burst, whose latencies
  run from the query's start, so they include the wait behind the others;
- SingleStream: one sample at a time, the next when the last is done: concurrency 1;
- MultiStream: a query of `samples_per_query` samples at a time: that concurrency.

The summary holds no date and no request count. LoadGen's detail log beside it
(`mlperf_log_detail.txt`, one `:::MLLOG {json}` line an event) has both: when the two come
together (a run folder, its archive, or both files in one upload) they are joined into one
document (`join_with_detail`), and the run takes its date (`test_datetime`), LoadGen's version
and its query count from the log. Alone, the summary asks the importer for the date. The
detail log alone is a run too: it logs every figure of the summary as an event
(`result_99.00_percentile_latency_ns`, `result_completed_samples_per_sec`, ...), unrounded,
which `summary_from_detail` sets out as the summary's lines. There is no failed-request count
in either.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Sequence
from datetime import UTC, datetime

from .base import (
    PERCENTILES,
    Ctx,
    Document,
    FieldRecorder,
    LoadTestFormatError,
    ParsedRun,
    mark_failed,
    present,
    rate_label,
    single_object,
)
from .detect import decode, parse_json
from .folders import Files, by_folder
from .mlperf_text import BANNER, KEY, summary_documents
from .registry import LoadTestFormat, register

FORMAT = "mlperf"
SUMMARY_FILE = "mlperf_log_summary.txt"
DETAIL_FILE = "mlperf_log_detail.txt"
MLLOG = ":::MLLOG "
# What the detail log adds to the summary.
DETAIL_KEYS = (
    "test_datetime",
    "loadgen_version",
    "effective_scenario",
    "effective_samples_per_query",
    "result_query_count",
    "result_invalid_reason",
)
# The detail log's events that stand for the summary's lines (LoadGen's `LogDetail` and
# `LogSummary`, results.cc), for a detail log that comes without its summary.
SUMMARY_OF_DETAIL = {
    "sut_name": "SUT name",
    "effective_scenario": "Scenario",
    "effective_test_mode": "Mode",
    "result_validity": "Result is",
    "result_perf_constraints_met": "Performance constraints satisfied",
    "result_min_duration_met": "Min duration satisfied",
    "result_min_queries_met": "Min queries satisfied",
    "early_stopping_met": "Early stopping satisfied",
    "result_completed_samples_per_sec": "Completed samples per second",
    "result_samples_per_second": "Samples per second",
    "result_qps_with_loadgen_overhead": "QPS w/ loadgen overhead",
    "result_completed_tokens_per_second": "Completed tokens per second",
    "result_tokens_per_second": "Tokens per second",
    "effective_target_qps": "target_qps",
    "effective_samples_per_query": "samples_per_query",
    "effective_target_latency_ns": "target_latency (ns)",
    "requested_server_ttft_latency": "ttft_latency (ns)",
    "requested_server_tpot_latency": "tpot_latency (ns)",
    "effective_min_duration_ms": "min_duration (ms)",
}
# Percentile events, by the summary's row they stand for ({} is "99.00"). MultiStream's summary
# gives the per-query latencies, the detail log both.
PERCENTILE_EVENTS = {
    "{} percentile latency (ns)": "result_{}_percentile_latency_ns",
    "{} percentile first token latency (ns)": "result_first_token_{}_percentile_latency_ns",
    "{} percentile time to output token (ns)": "result_time_per_output_token_{}_percentile_ns",
}
MULTISTREAM_LATENCY = "result_{}_percentile_per_query_latency_ns"
EARLY_STOPPING_EVENTS = (
    "early_stopping_result",
    "early_stopping_ttft_result",
    "early_stopping_tpot_result",
)
NS_PER_MS = 1_000_000.0
# LoadGen's percentile rows -> PerfHub's labels.
ROWS = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "99.00": "p99", "99.90": "p999"}
LATENCY_ROWS = {
    "e2e": "{} percentile latency (ns)",
    "ttft": "{} percentile first token latency (ns)",
    "tpot": "{} percentile time to output token (ns)",
}
QPS_KEYS = ("Completed samples per second", "Samples per second", "QPS w/ loadgen overhead")
TOKEN_KEYS = ("Completed tokens per second", "Tokens per second")
INFERRED = " (inferred)"
SCENARIOS = ("Server", "Offline", "SingleStream", "MultiStream")
# What LoadGen checks for a valid result, as the summary words them.
CONDITIONS = (
    "Performance constraints satisfied",
    "Min duration satisfied",
    "Min queries satisfied",
    "Early stopping satisfied",
)
# The SLO a Server run was held to (TTFT and TPOT for the LLM benchmarks, latency otherwise).
TARGETS = {
    "ttft_latency (ns)": "ttft_ms",
    "tpot_latency (ns)": "tpot_ms",
    "target_latency (ns)": "latency_ms",
}
_PROCESSED = re.compile(r"Processed at least \d+ queries \((?P<count>\d+)\)")


def looks_like(data: dict) -> bool:
    return isinstance(data.get(KEY), dict)


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    summary = Ctx(FORMAT).obj(data, KEY)
    values = summary.get("values") if isinstance(summary.get("values"), dict) else {}
    lines = summary.get("lines") if isinstance(summary.get("lines"), dict) else {}
    bullets = [b for b in summary.get("bullets") or [] if isinstance(b, str)]
    # A summary made from a detail log: the event each line came from, for the errors.
    events = summary.get("events") if isinstance(summary.get("events"), dict) else {}

    def ctx(key: str) -> Ctx:
        line = lines.get(key)
        name = repr(events[key]) if isinstance(events.get(key), str) else repr(key)
        return Ctx(FORMAT, name, line=line if isinstance(line, int) else None)

    def number(key: str) -> float | None:
        return ctx(key).number(values.get(key)) if key in values else None

    scenario = values.get("Scenario")
    if scenario not in SCENARIOS:
        raise ctx("Scenario").error(
            f"expected a scenario of {', '.join(SCENARIOS)}, got {scenario!r}"
        )
    mode = values.get("Mode", "")
    if not str(mode).startswith("Performance"):
        raise ctx("Mode").error(
            f"this is a {mode or 'non-performance'} run: it measures no latency; import the "
            "summary of the performance run (performance/run_1/mlperf_log_summary.txt)"
        )
    recorder = FieldRecorder()
    put, fields, sources = recorder.put, recorder.fields, recorder.sources
    notes: list[str] = []

    for metric, row in LATENCY_ROWS.items():
        for theirs, label in ROWS.items():
            key = row.format(theirs)
            value = number(key)
            if value is not None:
                put(f"{metric}_{label}_ms", value / NS_PER_MS, f"{key} (ns -> ms)")
    if not any(fields[f"e2e_{label}_ms"] is not None for label in PERCENTILES):
        raise LoadTestFormatError(
            f"{FORMAT}: no latency percentiles ('50.00 percentile latency (ns)' ...): "
            "is the summary cut short?"
        )

    qps_key = next((key for key in QPS_KEYS if key in values), None)
    qps = number(qps_key) if qps_key else None
    put("qps", qps, qps_key)
    token_key = next((k for k in values if k.removesuffix(INFERRED) in TOKEN_KEYS), None)
    if token_key:
        put("output_tps", number(token_key), token_key)
        if token_key.endswith(INFERRED):
            notes.append(
                "LoadGen inferred the token rate from the benchmark's expected tokens a "
                "sample; it did not count the tokens"
            )

    per_query = number("samples_per_query")
    samples_per_query = int(per_query) if per_query is not None else None
    concurrency = count = rate = None
    rate_inf = scenario != "Server"
    if scenario == "Server":
        rate = number("target_qps")
        put("request_rate", rate, "target_qps (LoadGen's Poisson arrival rate)")
    elif scenario == "Offline":
        concurrency = count = samples_per_query
        put("concurrency", concurrency, "samples_per_query (every sample at once)")
        notes.append(
            "Offline: every sample is issued at once, so each latency includes the wait "
            "behind the others"
        )
    elif scenario == "SingleStream":
        concurrency = 1
        put("concurrency", 1, "Scenario : SingleStream (one sample at a time)")
        processed = next((m for b in bullets if (m := _PROCESSED.search(b))), None)
        count = int(processed["count"]) if processed else None
        if count is not None:
            sources["request_count"] = "Early Stopping Result: 'Processed at least N queries (n)'"
    else:
        concurrency = samples_per_query
        put("concurrency", concurrency, "samples_per_query (one query of them at a time)")
    detail = summary.get("detail") if isinstance(summary.get("detail"), dict) else {}
    measured_at, tool_version = _from_detail(detail, scenario, samples_per_query, recorder, notes)
    if detail.get("result_query_count") is not None:
        count = fields["request_count"]
    if count is not None:
        put("request_count", count, sources.get("request_count", "samples_per_query"))
        if qps:
            put("duration_s", count / qps, f"request count / {qps_key} (derived)")

    result = values.get("Result is")
    failed = [c for c in CONDITIONS if str(values.get(c, "")).lower() == "no"]
    if result != "VALID":
        reasons = f": {', '.join(c.lower() for c in failed)}: no" if failed else ""
        advice = f" ({'; '.join(bullets[:3])})" if bullets else ""
        notes.append(f"LoadGen judged the run {result or 'not valid'}{reasons}{advice}")
    targets = {
        ours: number(theirs) / NS_PER_MS
        for theirs, ours in TARGETS.items()
        if number(theirs)  # 0: no target
    }
    extra = {
        "sut_name": values.get("SUT name"),
        "scenario": scenario,
        "mode": mode,
        "result": result,
        "conditions_not_met": failed,
        "latency_targets": targets,  # the SLO the submission was held to
        "min_duration_ms": number("min_duration (ms)"),
        "early_stopping": [b for b in bullets if "percentile estimate" in b],
        "notes": notes,
    }
    load = rate_label(concurrency, rate, rate_inf and concurrency is None)
    run = ParsedRun(
        format=FORMAT,
        tool_version=tool_version,
        label=f"MLPerf {scenario} {load}".strip(),
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=None,
        samples={},
        extra=present(extra),
        sources=sources,
    )
    return [mark_failed(run)]


def _from_detail(
    detail: dict,
    scenario: str,
    samples_per_query: int | None,
    recorder: FieldRecorder,
    notes: list[str],
) -> tuple[datetime | None, str | None]:
    """The run's time, LoadGen's version and its sample count from the detail log's events."""
    if not detail:
        return None, None
    ctx = Ctx(f"{FORMAT}: {DETAIL_FILE}")
    effective = detail.get("effective_scenario")
    if effective is not None and effective != scenario:
        raise ctx.error(
            f"its scenario is {effective!r} where {SUMMARY_FILE} says {scenario!r}: not the "
            "same run"
        )
    queries = detail.get("result_query_count")
    if queries is not None:
        number = ctx.at("result_query_count").number(queries)
        per_query = samples_per_query or 1
        if number is not None:
            recorder.put(
                "request_count",
                int(number) * per_query,
                f"{DETAIL_FILE} result_query_count"
                + (f" x samples_per_query {per_query}" if per_query != 1 else ""),
            )
    reason = detail.get("result_invalid_reason")
    if isinstance(reason, str) and reason.strip():
        notes.append(f"LoadGen's reason: {reason.strip()[:300]}")
    version = detail.get("loadgen_version")
    tool_version = None
    if isinstance(version, str) and version.strip():
        tool_version = f"LoadGen {version.split('@')[0].strip()}"[:40]
    when = detail.get("test_datetime")
    if when is None:
        return None, tool_version
    if not isinstance(when, str):
        raise ctx.at("test_datetime").error(f"expected a time, got {when!r}")
    try:
        measured_at = datetime.fromisoformat(when.strip())
    except ValueError:
        raise ctx.at("test_datetime").error(f"expected a time, got {when!r}") from None
    if measured_at.tzinfo is None:
        measured_at = measured_at.replace(tzinfo=UTC)
    recorder.sources["measured_at"] = f"{DETAIL_FILE} test_datetime (UTC)"
    return measured_at, tool_version


def detail_events(content: bytes, name: str | None) -> dict:
    """The events of a detail log that PerfHub reads beside a summary ({key: value}, the first
    of each)."""
    events, _ = read_detail(content, name)
    return {key: value for key, value in events.items() if key in DETAIL_KEYS}


def read_detail(content: bytes, name: str | None) -> tuple[dict, dict[str, int]]:
    """Every event of a detail log ({key: value}, the first of each) and the line of each."""
    label = name or DETAIL_FILE
    try:
        text = decode(content)
    except LoadTestFormatError as exc:
        raise LoadTestFormatError(f"{FORMAT}: {label}: {exc}") from None
    events: dict = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.startswith(MLLOG):
            continue
        try:
            event = parse_json(line[len(MLLOG) :])
        except (LoadTestFormatError, ValueError):
            raise LoadTestFormatError(
                f"{FORMAT}: {label}: line {number}: not a LoadGen event (JSON after ':::MLLOG')"
            ) from None
        key = event.get("key") if isinstance(event, dict) else None
        if isinstance(key, str) and key not in events:
            events[key] = event.get("value")
            lines[key] = number
    if not events:
        raise LoadTestFormatError(f"{FORMAT}: {label}: no LoadGen event ({MLLOG.strip()} lines)")
    return events, lines


def summary_from_detail(content: bytes, name: str | None) -> dict:
    """A detail log that came alone, as the document `parse` reads from a summary: its events
    under the summary's names (`SUMMARY_OF_DETAIL`, `PERCENTILE_EVENTS`), each with its line."""
    events, at = read_detail(content, name)
    rows = dict(SUMMARY_OF_DETAIL)
    for theirs in ROWS:
        for row, event in PERCENTILE_EVENTS.items():
            rows[event.format(theirs)] = row.format(theirs)
        if events.get("effective_scenario") == "MultiStream":
            rows[MULTISTREAM_LATENCY.format(theirs)] = LATENCY_ROWS["e2e"].format(theirs)
            rows.pop(PERCENTILE_EVENTS["{} percentile latency (ns)"].format(theirs))
    values, lines, names = {}, {}, {}
    for event, row in rows.items():
        if event in events:
            value = events[event]
            values[row] = ("Yes" if value else "NO") if isinstance(value, bool) else value
            lines[row], names[row] = at[event], event
    bullets = [
        part.strip()[:300]
        for event in EARLY_STOPPING_EVENTS
        if isinstance(events.get(event), str)
        for part in events[event].split(" * ")
        if part.strip()
    ]
    detail = {key: value for key, value in events.items() if key in DETAIL_KEYS}
    document = {"values": values, "lines": lines, "bullets": bullets, "events": names}
    return {KEY: {**document, "detail": detail}}


def arrange_folder(files: Files) -> Files:
    """A submission folder's detail logs of accuracy runs (without a summary beside them) are
    not runs: left out (and named as skipped), where one uploaded by itself is refused saying
    so. A detail log of a performance run is a run, with its summary or alone."""
    with_summary = {
        posixpath.dirname(name) for _, name in files if posixpath.basename(name) == SUMMARY_FILE
    }
    return [
        (content, name)
        for content, name in files
        if posixpath.basename(name) != DETAIL_FILE
        or posixpath.dirname(name) in with_summary
        or not _accuracy_only(content)
    ]


def _accuracy_only(content: bytes) -> bool:
    """Whether a detail log is of a run that measured accuracy, not performance."""
    try:
        events, _ = read_detail(content, None)
    except LoadTestFormatError:
        return False  # read as a run, to be refused saying why
    mode = events.get("effective_test_mode")
    return isinstance(mode, str) and not mode.startswith("Performance")


def join_with_detail(
    files: Sequence[tuple[bytes, str | None]],
) -> list[tuple[bytes, str | None]]:
    """`files` with each folder's summary and detail log made into one document, which `parse`
    reads (canonical JSON: the same pair from any archive is one digest). Files named with no
    folder (a browser's upload) are one folder. A detail log without its summary is the
    summary's document made from its events (`summary_from_detail`); a summary alone passes
    unchanged."""
    folders = by_folder(files, (SUMMARY_FILE, DETAIL_FILE))
    joined: dict[str | None, bytes] = {}
    consumed: set[str | None] = set()
    for found in folders.values():
        if DETAIL_FILE not in found:
            continue
        detail_content, detail_name = found[DETAIL_FILE]
        if SUMMARY_FILE not in found:
            joined[detail_name] = _canonical(summary_from_detail(detail_content, detail_name))
            continue
        summary_content, summary_name = found[SUMMARY_FILE]
        try:
            documents = summary_documents(decode(summary_content))
        except LoadTestFormatError as exc:
            raise LoadTestFormatError(f"{FORMAT}: {summary_name}: {exc}") from None
        if not documents:
            raise LoadTestFormatError(
                f"{FORMAT}: {summary_name}: not a LoadGen summary ('{BANNER}' missing)"
            )
        document = documents[0].data
        document[KEY]["detail"] = detail_events(detail_content, detail_name)
        joined[summary_name] = _canonical(document)
        consumed.add(detail_name)
    return [
        (joined.get(name, content), name)
        for content, name in files
        if name not in consumed or name is None
    ]


def _canonical(document: dict) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


register(
    LoadTestFormat(
        name=FORMAT,
        priority=49,
        label="MLPerf Inference LoadGen summary",
        parse=parse,
        looks_like=looks_like,
        required=(KEY,),
        signature=(KEY,),
        filename_hints=("mlperf_log_summary",),
        # A submission's run folder: LoadGen's detail log and trace, the accuracy run's files.
        side_files=(
            "mlperf_log_trace.json",
            "mlperf_log_accuracy.json",
            "accuracy.txt",
            "measurements.json",
            "*.conf",
        ),
        companion_files=(DETAIL_FILE,),
        join_folder=join_with_detail,
        arrange_folder=arrange_folder,
    )
)
