"""AIPerf's per-request export, `profile_export.jsonl`: one JSON line per request.

Each line is `{"metadata": {...}, "metrics": {name: {"value", "unit"}}}`, and a failed request
has an `error` object instead of its latencies. The metadata carries the request's own clock
(`request_start_ns`, `request_end_ns`, Unix nanoseconds) and its phase (`benchmark_phase`:
"warmup" lines are not the measurement and are skipped). This is the richest file AIPerf
writes: every request's TTFT, TPOT (AIPerf's per-request `inter_token_latency`) and E2E, so
the percentiles, P99.9 included where there are requests enough, are taken from the requests
(`per_request`, one DDSketch per family) rather than read from a summary.

What it lacks is the load the run was given: no line says the concurrency or rate, so a run
from it does not join a sweep. The duration is the first request's start to the last one's end;
the measured mean number in flight (the requests' summed latency over that span) is kept as
the tool's measured concurrency.
"""

from __future__ import annotations

from .base import (
    Ctx,
    Document,
    FieldRecorder,
    ParsedRun,
    epoch_to_datetime,
    mark_failed,
    mean_std,
)
from .genai_perf import TO_MS, server_count_differs, server_count_note
from .registry import LoadTestFormat, register

FORMAT = "aiperf-records"
# AIPerf's per-request metric -> PerfHub's sample family
FAMILIES = {"time_to_first_token": "ttft", "inter_token_latency": "tpot", "request_latency": "e2e"}
SKIPPED_PHASES = ("warmup",)


def looks_like(data: dict) -> bool:
    metadata = data.get("metadata")
    return (
        isinstance(metadata, dict)
        and "request_start_ns" in metadata
        and isinstance(data.get("metrics", data.get("error")), dict)
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    recorder = FieldRecorder()
    put = recorder.put
    samples: dict[str, list[float]] = {family: [] for family in FAMILIES.values()}
    starts, ends, latencies = [], [], []
    prompt, output, usage = [], [], []
    succeeded = failed = skipped = 0
    for document in documents:
        ctx = document.ctx(FORMAT)
        data = document.data
        if not isinstance(data, dict):
            raise ctx.error("expected a JSON object")
        metadata = ctx.obj(data, "metadata")
        mctx = ctx.at("metadata")
        if metadata.get("benchmark_phase", metadata.get("phase_kind")) in SKIPPED_PHASES:
            skipped += 1
            continue
        start = mctx.num(metadata, "request_start_ns", required=True)
        end = mctx.num(metadata, "request_end_ns")
        if end is not None and end < start:
            raise mctx.at("request_end_ns").error("the request ends before it starts")
        starts.append(start)
        ends.append(end if end is not None else start)
        if data.get("error") is not None or metadata.get("was_cancelled") is True:
            failed += 1
            continue
        succeeded += 1
        metrics = ctx.obj(data, "metrics")
        values = {
            name: _ms(ctx.at("metrics"), metrics, name) for name in FAMILIES if name in metrics
        }
        if "request_latency" not in values:
            raise ctx.at("metrics").error("missing key 'request_latency' of a successful request")
        for name, value in values.items():
            samples[FAMILIES[name]].append(value)
        latencies.append(values["request_latency"])
        for name, into in (
            ("input_sequence_length", prompt),
            ("output_sequence_length", output),
            ("usage_completion_tokens", usage),
        ):
            count = _value(ctx.at("metrics"), metrics, name)
            if count is not None:
                into.append(count)
    if not starts:
        raise Ctx(FORMAT).error(f"no measured request (lines skipped as warm-up: {skipped})")

    first_start = min(starts)
    duration = (max(ends) - first_start) / 1e9
    put("request_count", succeeded, "successful request lines (no error, not cancelled)")
    put("duration_s", duration or None, "first request_start_ns to last request_end_ns")
    if duration:
        put("qps", succeeded / duration, "successful requests / duration")
    notes = ["percentiles are taken from the per-request values (DDSketch, ±1%)"]
    prompt_mean, prompt_std = mean_std(prompt)
    put("prompt_tokens_mean", prompt_mean, "input_sequence_length per request: mean")
    put("prompt_tokens_std", prompt_std, "input_sequence_length per request: std")
    tokens, source = output, "output_sequence_length"
    client, server = mean_std(output)[0], mean_std(usage)[0]
    if client is not None and server_count_differs(client, server):
        tokens, source = usage, "usage_completion_tokens (the server's count)"
        notes.append(server_count_note(client, server))
    output_mean, output_std = mean_std(tokens)
    put("output_tokens_mean", output_mean, f"{source} per request: mean")
    put("output_tokens_std", output_std, f"{source} per request: std")
    if duration:
        if tokens:
            put("output_tps", sum(tokens) / duration, f"sum of {source} / duration")
        if prompt:
            put("input_tps", sum(prompt) / duration, "sum of input_sequence_length / duration")
    extra = {
        "tool": "aiperf",
        "notes": notes,
        "warmup_lines_skipped": skipped,
    }
    if duration and latencies:
        # Time-averaged requests in flight over the run: exact from the requests' own times.
        extra["achieved_concurrency"] = sum(latencies) / 1000 / duration
    run = ParsedRun(
        format=FORMAT,
        tool_version="aiperf",
        label="aiperf records",
        measured_at=epoch_to_datetime(Ctx(FORMAT, "request_start_ns"), first_start / 1e9),
        fields=recorder.fields,
        errors=failed,
        samples={family: values for family, values in samples.items() if values},
        extra=extra,
        sources={
            **recorder.sources,
            "errors": "request lines with an error or cancelled",
            "measured_at": "the first request_start_ns",
        },
    )
    return [mark_failed(run)]


def _value(ctx: Ctx, metrics: dict, name: str) -> float | None:
    metric = metrics.get(name)
    if metric is None:
        return None
    if not isinstance(metric, dict):
        raise ctx.at(name).error("expected an object with a value and a unit")
    return ctx.at(name).num(metric, "value")


def _ms(ctx: Ctx, metrics: dict, name: str) -> float:
    value = _value(ctx, metrics, name)
    if value is None:
        raise ctx.at(name).error("expected a value")
    unit = str(metrics[name].get("unit", "ms")).strip().lower()
    if unit not in TO_MS:
        raise ctx.at(name).at("unit").error(f"expected a time unit (ms, s, us, ns), got {unit!r}")
    return value * TO_MS[unit]


register(
    LoadTestFormat(
        name=FORMAT,
        priority=25,
        label="AIPerf per-request records",
        parse=parse,
        looks_like=looks_like,
        required=("metadata",),
        signature=("metadata", "metrics", "error"),
        filename_hints=("profile_export.jsonl",),
    )
)
