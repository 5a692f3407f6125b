"""kubernetes-sigs inference-perf lifecycle reports: `stage_<N>_lifecycle_metrics.json`, one per
load stage (a rate of a `constant` or `poisson` load, or a concurrency level of a `concurrent`
one), and `summary_lifecycle_metrics.json`, every stage of the run together.

Each is `{benchmark_time_seconds, load_summary, successes, failures}`. `successes.latency`
holds one distribution per metric in seconds: `{mean, min, max, median, p90, p95, p99, p99.9,
...}` (before 0.4 the median was written `p50`). inference-perf measures on the client's clock:
TTFT from sending to the first streamed chunk, `time_per_output_token` as (last chunk - first
chunk) / (chunks - 1), which is PerfHub's TPOT; a run that did not stream has neither.
Throughputs are its totals over `benchmark_time_seconds` (first request sent to last answer).

The report writes no wall-clock time (its clock is monotonic). 0.7 writes each stage's
wall-clock window beside it, in the llm-d benchmark-report stub
`inference-perf.partial.stage_N.yaml` (`run.time.start`, `.end`: `time.time()` when the stage
began and when its last answer came); a folder's (or an upload's) stage file and its stub are
joined (`join_stage_times`), so the stage run gets its start. A stage file alone has no time:
it is asked of the importer, as for GenAI-Perf. A summary of several stages mixes their loads:
it is read, but it names no rate or concurrency, so it joins no sweep; the stage files are the
runs to import.
inference-perf's engine-side report (`*_prometheus_metrics.json`, the serving engine's own
histograms) has the same top-level keys and is refused with the name of the file to use.
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
    first_of,
    mark_failed,
    present,
    rate_label,
    ratio_or_none,
    single_object,
)
from .detect import decode, load_documents
from .folders import Files, drop_beside
from .genai_perf import server_count_differs
from .registry import LoadTestFormat, register

FORMAT = "inference-perf"
LATENCIES = {
    "request_latency": "e2e",
    "time_to_first_token": "ttft",
    "time_per_output_token": "tpot",
}
# Kept for display: end-to-end time over output tokens, and the gaps between streamed chunks.
OTHER_LATENCIES = ("normalized_time_per_output_token", "inter_token_latency")
# PerfHub's percentile label -> inference-perf's keys, newest first.
PERCENTILE_KEYS = {
    "p50": ("median", "p50"),
    "p90": ("p90",),
    "p95": ("p95",),
    "p99": ("p99",),
    "p999": ("p99.9",),
}
STAT_KEYS = ("mean", "min", "max", "median", "p50", "p90", "p95", "p99", "p99.9")
# The key a stage file's joined document carries its stage's wall-clock window under
# (`join_stage_times`); inference-perf itself writes no such key.
STAGE_TIME = "perfhub_stage_time"
STAGE_FILE = re.compile(r"(?:^|[-_.])stage_(?P<n>\d+)_lifecycle_metrics\.json$")
PARTIAL_FILE = re.compile(r"^inference-perf\.partial\.stage_(?P<n>\d+)\.yaml$")
PARTIAL_PATTERN = "inference-perf.partial.stage_*.yaml"


def looks_like(data: dict) -> bool:
    return isinstance(data.get("load_summary"), dict) and isinstance(data.get("successes"), dict)


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    ctx = Ctx(FORMAT)
    successes = ctx.obj(data, "successes")
    sctx = ctx.at("successes")
    if "latency" not in successes and "request_latency" in successes:
        raise sctx.error(
            "this is inference-perf's engine-side report (*_prometheus_metrics.json, the "
            "engine's histograms); import its lifecycle report "
            "(stage_<N>_lifecycle_metrics.json), measured on the client's clock"
        )
    load = ctx.obj(data, "load_summary")
    lctx = ctx.at("load_summary")
    failures = ctx.obj(data, "failures", required=False) or {}
    recorder = FieldRecorder()
    fields, sources, put = recorder.fields, recorder.sources, recorder.put
    notes: list[str] = []

    count = sctx.integer(successes, "count", required=True)
    put("request_count", count, "successes.count")
    throughput = sctx.obj(successes, "throughput", required=False) or {}
    tctx = sctx.at("throughput")
    duration = ctx.num(data, "benchmark_time_seconds")
    qps = tctx.num(throughput, "requests_per_sec")
    if duration is not None:
        put("duration_s", duration, "benchmark_time_seconds (first request sent to last answer)")
    elif count is not None and qps:
        duration = count / qps
        put("duration_s", duration, "successes.count / throughput.requests_per_sec (derived)")
    if qps is not None:
        put("qps", qps, "successes.throughput.requests_per_sec")
    else:
        put("qps", ratio_or_none(count, duration), "successes.count / benchmark_time_seconds")
    put(
        "input_tps",
        tctx.num(throughput, "input_tokens_per_sec"),
        "successes.throughput.input_tokens_per_sec",
    )

    stats: dict[str, dict[str, float]] = {}
    prompt_key = first_of(successes, ("prompt_tokens", "prompt_len"))
    if prompt_key:
        stats[prompt_key] = _stats(sctx, successes, prompt_key, scale=1.0)
        put("prompt_tokens_mean", stats[prompt_key].get("mean"), f"successes.{prompt_key}.mean")
    _output_tokens(sctx, successes, throughput, duration, recorder, stats, notes)

    latency = sctx.obj(successes, "latency", required=False) or {}
    latency_ctx = sctx.at("latency")
    for key, metric in LATENCIES.items():
        summary = _stats(latency_ctx, latency, key, scale=1000.0)
        stats[key] = summary
        for label in PERCENTILES:
            found = next((k for k in PERCENTILE_KEYS[label] if k in summary), None)
            if found is not None:
                put(
                    f"{metric}_{label}_ms",
                    summary[found],
                    f"successes.latency.{key}.{found} (s -> ms)",
                )
    for key in OTHER_LATENCIES:
        stats[key] = _stats(latency_ctx, latency, key, scale=1000.0)
    if count and not stats["time_to_first_token"]:
        notes.append("no TTFT or TPOT: the run did not stream (api.streaming: false)")

    concurrency = lctx.integer(load, "concurrency")
    rate = None if concurrency is not None else lctx.num(load, "requested_rate")
    # A `concurrent` stage is closed-loop: its requested_rate is an internal figure.
    rate_inf = concurrency is not None
    put("concurrency", concurrency, "load_summary.concurrency")
    put("request_rate", rate, "load_summary.requested_rate")
    if concurrency is None and rate is None:
        notes.append(
            "no load in the file: a summary of all stages (summary_lifecycle_metrics.json) "
            "mixes their loads; import the stage_<N>_lifecycle_metrics.json files for a sweep"
        )

    errors = ctx.at("failures").integer(failures, "count")
    if errors is not None:
        sources["errors"] = "failures.count"
    extra = {
        "achieved_rate": lctx.num(load, "achieved_rate"),
        "requests_sent": lctx.integer(load, "count"),
        "failures_by_label": _failure_labels(failures),
        "stats": {key: value for key, value in stats.items() if value},
        "notes": notes,
    }
    measured_at = _stage_start(ctx, data, count, errors, extra, sources)
    run = ParsedRun(
        format=FORMAT,
        tool_version=None,  # inference-perf does not write its version into the report
        label=f"inference-perf {rate_label(concurrency, rate, rate_inf) or 'all stages'}",
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=errors,
        samples={},
        extra=present(extra),
        sources=sources,
    )
    return [mark_failed(run)]


def _stage_start(
    ctx: Ctx,
    data: dict,
    count: int | None,
    errors: int | None,
    extra: dict,
    sources: dict,
) -> datetime | None:
    """The stage's start from its `inference-perf.partial.stage_N.yaml` (joined in by
    `join_stage_times`), or None. The stub's window runs from the stage's start (inference-perf
    then gives its request queue about a second before the first request) to the poll that saw
    the last answer, so it is longer than `benchmark_time_seconds`, which stays the duration;
    the window is kept for display."""
    stage = ctx.obj(data, STAGE_TIME, required=False)
    if stage is None:
        return None
    file = str(stage.get("file") or "inference-perf.partial.stage_N.yaml")
    tctx = Ctx(FORMAT, f"{file}: run.time")
    start = _wall_time(tctx.at("start"), stage.get("start"))
    end = _wall_time(tctx.at("end"), stage.get("end"))
    total = stage.get("requests")
    sent = (count or 0) + (errors or 0)
    if isinstance(total, int) and not isinstance(total, bool) and total != sent:
        raise Ctx(FORMAT, f"{file}: results.request_performance.aggregate.requests.total").error(
            f"{total} requests, where this stage's report counts {sent} (successes.count + "
            "failures.count): the stub of another stage or run"
        )
    if end is not None and end < start:
        raise tctx.at("end").error("before run.time.start")
    sources["measured_at"] = (
        f"{file}: run.time.start (the stage's start on the wall clock; its first request "
        "follows within about a second)"
    )
    if end is not None:
        extra["stage_window_s"] = (end - start).total_seconds()
    return start


def _wall_time(ctx: Ctx, value: object) -> datetime | None:
    """An ISO 8601 time as the stub writes it ("2026-12-07T12:15:17.305949Z"; no zone: UTC)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ctx.error(f"expected an ISO 8601 time, got {value!r}")
    try:
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ctx.error(f"expected an ISO 8601 time, got {value[:40]!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _output_tokens(
    ctx: Ctx,
    successes: dict,
    throughput: dict,
    duration: float | None,
    recorder: FieldRecorder,
    stats: dict,
    notes: list[str],
) -> None:
    """`output_len` is the tool's count (its tokenizer over the answer's text, unless run with
    the server's count); `output_tokens` (0.7+) is the server's `usage`. Where they differ by
    more than 10%, the server's count is used, as for AIPerf."""
    put = recorder.put
    client_key = first_of(successes, ("output_len",))
    client = _stats(ctx, successes, client_key, scale=1.0) if client_key else {}
    server = _stats(ctx, successes, "output_tokens", scale=1.0)
    total = ctx.at("output_tokens").num(successes.get("output_tokens") or {}, "total")
    stats.update(output_len=client, output_tokens=server)
    if client.get("mean") is not None and server_count_differs(client["mean"], server.get("mean")):
        put(
            "output_tokens_mean",
            server["mean"],
            "successes.output_tokens.mean (the server's count)",
        )
        if total is not None and duration:
            put(
                "output_tps",
                total / duration,
                "successes.output_tokens.total / benchmark_time_seconds",
            )
        elif recorder.fields["qps"] is not None:
            put(
                "output_tps",
                server["mean"] * recorder.fields["qps"],
                "successes.output_tokens.mean x requests per second (derived)",
            )
        notes.append(
            f"inference-perf counted {client['mean']:.4g} output tokens a request by "
            f"re-tokenizing the answers' text, the server {server['mean']:.4g} (usage): output "
            "tokens and throughput are the server's (report.request_lifecycle."
            "use_server_output_tokens: true avoids it); TPOT is timed between streamed chunks, "
            "so no count skews it"
        )
        return
    mean = client.get("mean", server.get("mean"))
    put(
        "output_tokens_mean",
        mean,
        "successes.output_len.mean" if client else "successes.output_tokens.mean",
    )
    put(
        "output_tps",
        ctx.at("throughput").num(throughput, "output_tokens_per_sec"),
        "successes.throughput.output_tokens_per_sec",
    )


def _stats(ctx: Ctx, data: dict, key: str, *, scale: float) -> dict[str, float]:
    summary = ctx.obj(data, key, required=False)
    if not summary:
        return {}
    sctx = ctx.at(key)
    out = {}
    for stat in STAT_KEYS:
        value = sctx.num(summary, stat)
        if value is not None:
            out[stat] = value * scale
    return out


def _failure_labels(failures: dict) -> dict[str, int]:
    """inference-perf 0.7+ groups failures by a label ("400 - Context Window"); the counts only,
    since the messages echo server text."""
    labels = failures.get("by_label")
    if not isinstance(labels, dict):
        return {}
    out = {}
    for label, entry in labels.items():
        count = entry.get("count") if isinstance(entry, dict) else None
        if isinstance(count, int) and not isinstance(count, bool):
            out[str(label)[:200]] = count
    return out


# A results folder's files that are not runs: the config, the per-request dump, the engine-side
# reports, per-adapter and per-session cuts of the stages' requests (they would count twice),
# and 0.7's check of its own reports (`validation.json`: warnings and errors it found).
SIDE_FILES = (
    "*config.yaml",
    "validation.json",
    "*per_request_lifecycle_metrics.json",
    "*_prometheus_metrics.json",
    "*adapter_*_lifecycle_metrics.json",
    "*session_lifecycle_metrics.json",
    "*.partial.*.yaml",
)


def join_stage_times(
    files: Sequence[tuple[bytes, str | None]],
) -> list[tuple[bytes, str | None]]:
    """`files` with each stage file joined with its `inference-perf.partial.stage_N.yaml` (the
    same N, the same folder; files named with no folder are one folder): the stage's JSON with
    the stub's `run.time` under STAGE_TIME, as canonical JSON (one digest from any archive).
    The stubs are consumed; a stage without its stub, and every other file, pass unchanged."""
    stubs: dict[tuple[str, str], tuple[bytes, str | None]] = {}
    for content, name in files:
        base = posixpath.basename(name or "")
        if match := PARTIAL_FILE.match(base):
            stubs[(posixpath.dirname(name or ""), match["n"])] = (content, name)
    if not stubs:
        return list(files)
    joined: dict[str | None, bytes] = {}
    consumed: set[str | None] = set()
    for content, name in files:
        match = STAGE_FILE.search(posixpath.basename(name or ""))
        stub = match and stubs.get((posixpath.dirname(name or ""), match["n"]))
        if not stub:
            continue
        joined[name] = _with_stage_time(content, name, *stub)
        consumed.add(stub[1])
    if not joined:
        return list(files)
    return [
        (joined.get(name, content), name)
        for content, name in files
        if name not in consumed or name is None
    ]


def _with_stage_time(content: bytes, name: str | None, stub: bytes, stub_name: str | None) -> bytes:
    label = posixpath.basename(stub_name or "") or PARTIAL_PATTERN
    try:
        stage = single_object(FORMAT, load_documents(decode(content)))
        documents = load_documents(decode(stub))
    except LoadTestFormatError as exc:
        raise LoadTestFormatError(f"{FORMAT}: {name or 'stage file'}: {exc}") from None
    partial = documents[0].data if len(documents) == 1 else None
    if not isinstance(partial, dict):
        raise LoadTestFormatError(f"{FORMAT}: {label}: expected a YAML mapping")
    ctx = Ctx(FORMAT, label)
    time = ctx.at("run").obj(ctx.obj(partial, "run"), "time", required=False) or {}
    requests = (
        ((partial.get("results") or {}).get("request_performance") or {}).get("aggregate") or {}
    ).get("requests") or {}
    stage[STAGE_TIME] = {
        "file": label,
        "start": time.get("start"),
        "end": time.get("end"),
        "requests": requests.get("total") if isinstance(requests, dict) else None,
    }
    if stage[STAGE_TIME]["start"] is None:
        del stage[STAGE_TIME]  # inference-perf omits run.time when it had no stage window
    return json.dumps(stage, sort_keys=True, separators=(",", ":")).encode()


def arrange_folder(files: Files) -> Files:
    """A folder's summary is dropped where the folder holds its stage files: it sums their
    requests (for one stage, the same ones), so the stages are the runs to import. A stage's
    `inference-perf.partial.stage_N.yaml` without its stage file beside it is not a run."""
    stages = {
        (posixpath.dirname(name), match["n"])
        for _, name in files
        if (match := STAGE_FILE.search(posixpath.basename(name)))
    }
    files = [
        (content, name)
        for content, name in files
        if not (match := PARTIAL_FILE.match(posixpath.basename(name)))
        or (posixpath.dirname(name), match["n"]) in stages
    ]
    return drop_beside(
        files, drop=("*summary_lifecycle_metrics.json",), beside="*stage_*_lifecycle_metrics.json"
    )


register(
    LoadTestFormat(
        name=FORMAT,
        priority=45,
        label="inference-perf (kubernetes-sigs)",
        parse=parse,
        looks_like=looks_like,
        required=("load_summary", "successes"),
        signature=("load_summary", "successes", "failures", "benchmark_time_seconds"),
        filename_hints=("lifecycle_metrics", "inference-perf", "inference_perf"),
        side_files=SIDE_FILES,
        companion_files=(PARTIAL_PATTERN,),
        join_folder=join_stage_times,
        arrange_folder=arrange_folder,
    )
)
