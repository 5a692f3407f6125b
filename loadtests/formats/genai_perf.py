"""NVIDIA GenAI-Perf `profile_export_genai_perf.json`, and AIPerf's `profile_export_aiperf.json`
(GenAI-Perf's successor, same metric layout).

Each metric is `{unit, avg, p1..p99, min, max, std}`; there is no p99.9, so p999 stays missing.
GenAI-Perf's `inter_token_latency` is per request (latency - TTFT) / (output tokens - 1), which is
what PerfHub calls TPOT, so it fills the tpot columns. `telemetry_stats` holds one entry per GPU.
GenAI-Perf writes no timestamp and no duration: the run's date is asked of the importer, and the
duration follows from count / throughput (GenAI-Perf's `request_throughput.avg` is one figure,
requests over the time from the first request to the last response, not a mean of rates).
AIPerf adds `benchmark_duration`, token totals and `min_request_timestamp`, which are used first.
"""

from __future__ import annotations

import json
import posixpath
from datetime import UTC, datetime

from .base import (
    PERCENTILES,
    Ctx,
    Document,
    FieldRecorder,
    ParsedRun,
    arrival,
    epoch_to_datetime,
    mark_failed,
    present,
    rate_label,
    single_object,
)
from .registry import LoadTestFormat, register

FORMAT = "genai-perf"
LATENCIES = {"request_latency": "e2e", "time_to_first_token": "ttft", "inter_token_latency": "tpot"}
# Everything else with a distribution, kept for display.
OTHER_STATS = ("time_to_second_token", "output_token_throughput_per_user")
TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}
# AIPerf warns when its own token count and the server's differ by more than this.
USAGE_MISMATCH = 0.10
STAT_KEYS = (
    "avg",
    "std",
    "min",
    "max",
    "p1",
    "p5",
    "p10",
    "p25",
    "p50",
    "p75",
    "p90",
    "p95",
    "p99",
)


def looks_like(data: dict) -> bool:
    metric = data.get("request_throughput") or data.get("time_to_first_token")
    return isinstance(metric, dict) and "avg" in metric


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    ctx = Ctx(FORMAT)
    recorder = FieldRecorder()
    fields, sources, put = recorder.fields, recorder.sources, recorder.put

    count = _avg(ctx, data, "request_count")
    put("request_count", None if count is None else round(count), "request_count.avg")
    duration = _avg(ctx, data, "benchmark_duration")
    if duration is not None:
        # AIPerf: totals over the measured duration.
        put("duration_s", duration, "benchmark_duration.avg (s)")
        if duration and count is not None:
            put("qps", count / duration, "request_count / benchmark_duration")
        for name, key in (("output_tps", "total_osl"), ("input_tps", "total_isl")):
            total = _avg(ctx, data, key)
            if duration and total is not None:
                put(name, total / duration, f"{key} / benchmark_duration")
    if fields["qps"] is None:
        put("qps", _avg(ctx, data, "request_throughput", required=True), "request_throughput.avg")
    if fields["output_tps"] is None:
        put("output_tps", _avg(ctx, data, "output_token_throughput"), "output_token_throughput.avg")

    stats = {}
    for name in ("input_sequence_length", "output_sequence_length"):
        stats[name] = _stats(ctx, data, name, scale=1.0)
    prompt, output = stats["input_sequence_length"], stats["output_sequence_length"]
    put("prompt_tokens_mean", prompt.get("avg"), "input_sequence_length.avg")
    put("prompt_tokens_std", prompt.get("std"), "input_sequence_length.std")
    put("output_tokens_mean", output.get("avg"), "output_sequence_length.avg")
    put("output_tokens_std", output.get("std"), "output_sequence_length.std")
    config = ctx.obj(data, "input_config", required=False) or {}
    streaming = config.get("streaming", _dig_endpoint(config, "streaming"))
    latencies = LATENCIES
    if streaming is False:
        # Without a stream the first token arrives with the last: GenAI-Perf then writes each
        # request's whole latency as its time_to_first_token. Neither TTFT nor TPOT was measured.
        latencies = {k: m for k, m in LATENCIES.items() if m == "e2e"}
        notes = [
            "no TTFT or TPOT: the run did not stream (input_config.streaming false), so "
            "GenAI-Perf's time_to_first_token is each request's whole latency"
        ]
    else:
        notes = [
            "TPOT is GenAI-Perf's inter_token_latency: per request, (end-to-end - TTFT) / "
            "(output tokens - 1)"
        ]
    notes.extend(_prefer_server_count(ctx, data, recorder, output, duration))

    if fields["input_tps"] is None and fields["qps"] is not None and prompt.get("avg") is not None:
        put(
            "input_tps",
            fields["qps"] * prompt["avg"],
            "request_throughput x input_sequence_length.avg (derived)",
        )
    if fields["duration_s"] is None and count is not None and fields["qps"]:
        put("duration_s", count / fields["qps"], "request_count / request_throughput (derived)")

    for key, metric in latencies.items():
        unit = _unit(ctx, data, key)
        summary = _stats(ctx, data, key, scale=TO_MS[unit] if unit else 1.0)
        stats[key] = summary
        for label in PERCENTILES:
            put(f"{metric}_{label}_ms", summary.get(label), f"{key}.{label} ({unit or 'ms'})")
    for key in OTHER_STATS:
        stats[key] = _stats(ctx, data, key, scale=TO_MS.get(_unit(ctx, data, key) or "", 1.0))

    telemetry = _telemetry(ctx, data)
    put(
        "gpu_util",
        telemetry.pop("_gpu_util", None),
        (
            "telemetry_stats.gpu_utilization"
            if "telemetry_stats" in data
            else "telemetry_data nvidia_gpu_utilization (AIPerf)"
        )
        + ": mean over GPUs "
        f"{', '.join(telemetry.pop('_gpu_util_gpus', []))} (those with memory in use), % -> 0-1",
    )

    config_ctx = ctx.at("input_config")
    stimulus, stimulus_key = _stimulus(config)
    concurrency = config_ctx.integer(stimulus, "concurrency")
    # AIPerf's phases name the rate `rate` (0.10 to 0.13), its arrival pattern `type`.
    rate_key = "rate" if "rate" in stimulus and "request_rate" not in stimulus else "request_rate"
    rate = config_ctx.num(stimulus, rate_key)
    # Concurrency mode is closed-loop: no arrival rate limits the load.
    rate_inf = rate is None and concurrency is not None
    put("concurrency", concurrency, f"{stimulus_key}.concurrency")
    put("request_rate", rate, f"{stimulus_key}.{rate_key}")

    errors = _avg(ctx, data, "error_request_count")
    if errors is not None:
        sources["errors"] = "error_request_count.avg"
    else:
        errors = _error_summary(ctx, data)
        if errors is not None:
            sources["errors"] = "error_summary: the sum of its counts (empty: none failed)"
    if errors is None:
        errors = _errors_from_completed(ctx, data, count)
        if errors is not None:
            sources["errors"] = "completed requests (success + error) - request_count"
    cancelled = _cancelled(data)
    if errors is not None and cancelled:
        errors = max(errors - cancelled, 0)
        notes.append(
            f"{cancelled} requests were cancelled on purpose (--request-cancellation-rate, "
            "AIPerf's RequestCancellationError): counted apart, not as failures"
        )
    if documents[0].origin == "csv":
        notes.append(
            "read from the CSV export, which holds no input config: the load this run was "
            "given (concurrency or rate) and its time are not in the file"
        )
    measured_at = _measured_at(ctx, data)
    if measured_at is not None:
        sources["measured_at"] = (
            "min_request_timestamp (ns)" if "min_request_timestamp" in data else "start_time"
        )
    version = config_ctx.text(config, "genai_perf_version") or ctx.text(data, "genai_perf_version")
    aiperf = ctx.text(data, "aiperf_version")
    # AIPerf writes what GenAI-Perf never did (a duration, an error summary): named as itself.
    tool = "aiperf" if (aiperf or duration is not None or "error_summary" in data) else "genai-perf"
    extra = {
        "tool": tool,
        "model": _model(config),
        "endpoint_type": _endpoint_type(config),
        "service_kind": config_ctx.text(config, "service_kind"),
        "streaming": streaming,
        # AIPerf's measured mean number of requests in flight.
        "achieved_concurrency": _avg(ctx, data, "effective_concurrency"),
        "cancelled": cancelled or None,
        # A rate-mode phase's `--arrival-pattern` (its `type`) and gamma's smoothness.
        "arrival": None
        if rate is None
        else arrival(stimulus.get("type"), config_ctx.num(stimulus, "smoothness")),
        "stats": {key: value for key, value in stats.items() if value},
        "telemetry": telemetry,
        "notes": notes,
    }
    run = ParsedRun(
        format=FORMAT,
        tool_version=f"aiperf {aiperf}" if aiperf else ("aiperf" if tool == "aiperf" else version),
        label=f"{tool} {rate_label(concurrency, rate, rate_inf)}".strip(),
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=None if errors is None else round(errors),
        samples={},
        extra=present(extra),
        sources=sources,
    )
    return [mark_failed(run)]


def _prefer_server_count(
    ctx: Ctx, data: dict, recorder: FieldRecorder, output: dict, duration: float | None
) -> list[str]:
    """AIPerf counts output tokens by tokenizing the answer's text with its own tokenizer; the
    server's count (`usage_completion_tokens`, when it returns usage) is what was generated
    and billed. Where the two differ by more than AIPerf's own warning threshold (10%), the
    output-token figures are the server's, and the notes say what that leaves skewed."""
    usage = _stats(ctx, data, "usage_completion_tokens", scale=1.0)
    server, client = usage.get("avg"), output.get("avg")
    if client is None or not server_count_differs(client, server):
        return []
    put = recorder.put
    put("output_tokens_mean", server, "usage_completion_tokens.avg (the server's count)")
    put("output_tokens_std", usage.get("std"), "usage_completion_tokens.std")
    total = _avg(ctx, data, "total_usage_completion_tokens")
    if total is not None and duration:
        put("output_tps", total / duration, "total_usage_completion_tokens / benchmark_duration")
    elif recorder.fields["output_tps"] is not None:
        put(
            "output_tps",
            recorder.fields["output_tps"] * server / client,
            "output token throughput x usage_completion_tokens / output_sequence_length",
        )
    return [server_count_note(client, server)]


def server_count_differs(client: float, server: float | None) -> bool:
    """True when AIPerf's re-tokenized output tokens a request and the server's (usage) differ
    by more than AIPerf's own warning threshold: then the server's count is used."""
    return bool(server) and abs(client - server) > USAGE_MISMATCH * server


def server_count_note(client: float, server: float) -> str:
    """What a run whose output tokens are the server's says about it (means a request)."""
    return (
        f"the tool counted {client:.4g} output tokens a request by re-tokenizing the text, "
        f"the server {server:.4g} (usage): output tokens and throughput are the server's; "
        "inter_token_latency (TPOT) divides by the tool's count, so it is skewed by as much "
        "(a tokenizer that does not match the served model's; --use-server-token-count avoids it)"
    )


def _errors_from_completed(ctx: Ctx, data: dict, count: float | None) -> int | None:
    """AIPerf's CSV has no error count, but its "Completed Requests (Success + Error)" less
    the request count (successes) is one."""
    for key in ("completed_request_count", "completed_requests"):
        completed = _avg(ctx, data, key)
        if completed is not None and count is not None:
            if completed < count:
                raise ctx.at(key).error(
                    f"fewer completed requests ({completed:g}) than successful ones ({count:g})"
                )
            return round(completed - count)
    return None


def _error_summary(ctx: Ctx, data: dict) -> int | None:
    """AIPerf's failed requests: `error_summary` lists each error kind with its count, and is
    empty when none failed (its `error_request_count` is then null, not 0)."""
    summary = data.get("error_summary")
    if summary is None:
        return None
    if not isinstance(summary, list):
        raise ctx.at("error_summary").error("expected a list of {error_details, count}")
    total = 0
    for index, entry in enumerate(summary):
        if not isinstance(entry, dict):
            raise ctx.at("error_summary").at(index).error("expected an object with a count")
        count = ctx.at("error_summary").at(index).integer(entry, "count", required=True)
        if count < 0:
            raise ctx.at("error_summary").at(index).at("count").error("expected a count >= 0")
        total += count
    return total


def _cancelled(data: dict) -> int:
    """Requests AIPerf cancelled because it was asked to (`--request-cancellation-rate`): its
    `error_summary` lists them as RequestCancellationError (HTTP 499). Counts were checked by
    `_error_summary` where they are read as errors."""
    total = 0
    for entry in data.get("error_summary") or []:
        details = entry.get("error_details") if isinstance(entry, dict) else None
        count = entry.get("count") if isinstance(entry, dict) else None
        if (
            isinstance(details, dict)
            and details.get("type") == "RequestCancellationError"
            and isinstance(count, int)
            and not isinstance(count, bool)
            and count > 0
        ):
            total += count
    return total


def _measured_at(ctx: Ctx, data: dict) -> datetime | None:
    nanos = _avg(ctx, data, "min_request_timestamp")
    if nanos is not None:
        return epoch_to_datetime(ctx.at("min_request_timestamp"), nanos / 1e9)
    text = ctx.text(data, "start_time")
    if text is None:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        # AIPerf writes UTC without a zone.
        return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ctx.at("start_time").error(f"expected an ISO 8601 time, got {text!r}") from None


def _avg(ctx: Ctx, data: dict, key: str, *, required: bool = False) -> float | None:
    metric = ctx.obj(data, key, required=required)
    if metric is None:
        return None
    return ctx.at(key).num(metric, "avg", required=required)


def _unit(ctx: Ctx, data: dict, key: str) -> str | None:
    metric = ctx.obj(data, key, required=False)
    if metric is None or "unit" not in metric:
        return None
    unit = str(metric["unit"]).strip().lower()
    if key in LATENCIES and unit not in TO_MS:
        raise ctx.at(key).at("unit").error(f"expected a time unit (ms, s, us, ns), got {unit!r}")
    return unit


def _stats(ctx: Ctx, data: dict, key: str, *, scale: float) -> dict[str, float]:
    metric = ctx.obj(data, key, required=False)
    if metric is None:
        return {}
    values = {stat: ctx.at(key).num(metric, stat) for stat in STAT_KEYS}
    return {stat: value * scale for stat, value in values.items() if value is not None}


# AIPerf's GPU metric keys (`telemetry_data`) -> GenAI-Perf's (`telemetry_stats`).
AIPERF_TELEMETRY = {
    "nvidia_gpu_utilization": "gpu_utilization",
    "nvidia_memory_used": "gpu_memory_used",
}


def _aiperf_telemetry(ctx: Ctx, data: dict) -> dict | None:
    """AIPerf's `telemetry_data.endpoints.<endpoint>.gpus.<gpu>.metrics.<key>` as GenAI-Perf's
    `telemetry_stats.<key>.<gpu>` (the GPU named by endpoint and index), or None without it."""
    endpoints = (ctx.obj(data, "telemetry_data", required=False) or {}).get("endpoints")
    if not isinstance(endpoints, dict):
        return None
    out: dict = {}
    ectx = ctx.at("telemetry_data").at("endpoints")
    for endpoint, entry in endpoints.items():
        gpus = entry.get("gpus") if isinstance(entry, dict) else None
        if not isinstance(gpus, dict):
            raise ectx.at(endpoint).error("expected an object with gpus")
        for key, gpu in gpus.items():
            if not isinstance(gpu, dict) or not isinstance(gpu.get("metrics"), dict):
                raise ectx.at(endpoint).at(key).error("expected an object with metrics")
            name = f"{endpoint} {gpu.get('gpu_index', key)}"
            for metric, ours in AIPERF_TELEMETRY.items():
                summary = gpu["metrics"].get(metric)
                if isinstance(summary, dict):
                    out.setdefault(ours, {"unit": summary.get("unit")})[name] = summary
    return out or None


def _telemetry(ctx: Ctx, data: dict) -> dict:
    """Per-GPU averages by metric; GPU utilization (percent) becomes a 0-1 ratio."""
    telemetry = ctx.obj(data, "telemetry_stats", required=False)
    if telemetry is None:
        telemetry = _aiperf_telemetry(ctx, data)
    if not telemetry:
        return {}
    out: dict = {}
    tctx = ctx.at("telemetry_stats")
    for metric, per_gpu in telemetry.items():
        if not isinstance(per_gpu, dict):
            raise tctx.at(metric).error("expected an object")
        unit = per_gpu.get("unit")
        gpus = {}
        for gpu, summary in per_gpu.items():
            if gpu == "unit":
                continue
            if not isinstance(summary, dict):
                raise tctx.at(metric).at(gpu).error("expected an object")
            avg = tctx.at(metric).at(gpu).num(summary, "avg")
            if avg is not None:
                gpus[gpu] = avg
        out[metric] = {"unit": unit, "gpus": gpus}
    utilization = out.get("gpu_utilization", {}).get("gpus", {})
    if utilization:
        # GenAI-Perf reports every GPU of the node; one holding no memory served nothing, so
        # only the GPUs with memory in use count (all of them when memory is not reported).
        memory = out.get("gpu_memory_used", {}).get("gpus", {})
        serving = {gpu: util for gpu, util in utilization.items() if memory.get(gpu, 1) > 0}
        chosen = serving or utilization
        # Mean over GPUs of time-averaged utilization: a mean of means, not a percentile.
        mean = sum(chosen.values()) / len(chosen)
        unit = out["gpu_utilization"]["unit"]
        ratio = mean / 100 if unit == "%" or mean > 1 else mean
        if ratio > 1:
            raise tctx.at("gpu_utilization").error(f"utilization above 100%: {mean!r}")
        out["_gpu_util"] = ratio
        out["_gpu_util_gpus"] = sorted(chosen)
    return out


def _stimulus(config: dict) -> tuple[dict, str]:
    """Where the load settings sit: input_config (GenAI-Perf before config files),
    input_config.perf_analyzer.stimulus (config files), input_config.loadgen (AIPerf)."""
    analyzer = config.get("perf_analyzer")
    if isinstance(analyzer, dict) and isinstance(analyzer.get("stimulus"), dict):
        return analyzer["stimulus"], "input_config.perf_analyzer.stimulus"
    if isinstance(config.get("loadgen"), dict):
        return config["loadgen"], "input_config.loadgen"
    phases = config.get("phases")
    if isinstance(phases, list):
        for phase in phases:
            # AIPerf 0.13 may leave a warm-up phase's exclusion unwritten (its kind forces it).
            if (
                isinstance(phase, dict)
                and not phase.get("exclude_from_results")
                and phase.get("kind") != "warmup"
            ):
                return phase, "input_config.phases[profiling]"
    return config, "input_config"


def _endpoint_type(config: dict) -> str | None:
    endpoint = config.get("endpoint")
    if isinstance(endpoint, dict) and isinstance(endpoint.get("type"), str):
        return endpoint["type"]
    value = config.get("endpoint_type")
    return value if isinstance(value, str) else None


def _dig_endpoint(config: dict, key: str):
    endpoint = config.get("endpoint")
    return endpoint.get(key) if isinstance(endpoint, dict) else None


def _model(config: dict) -> str | None:
    model = config.get("model") or config.get("model_names") or config.get("models")
    if isinstance(model, dict):  # AIPerf: {"items": [{"name": ...}]}
        model = [item.get("name") for item in model.get("items", []) if isinstance(item, dict)]
    if isinstance(model, list):
        return ", ".join(str(name) for name in model if name) or None
    return None if model is None else str(model)


# An artifacts folder's files that are not runs: the prompts sent (`inputs.json`; GenAI-Perf's
# early `llm_inputs.json`), and AIPerf's raw payloads, time slices, GPU telemetry, server
# scrapes (0.13: `server_metrics_export.*`, and `server_metrics.json` per phase), its console
# tables, a sweep's run config and the aggregates of several profile runs (of a setting's
# trials, of a sweep's settings: each run is in the folder too).
SIDE_FILES = (
    "inputs.json",
    "llm_inputs.json",
    "*_raw.jsonl",
    "*_timeslices.*",
    "*_gpu_telemetry.jsonl",
    "*_server_metrics.*",
    "server_metrics_export.*",
    "server_metrics.json",
    "profile_export_console.txt",
    "run_config.json",
    "*_aggregate.*",
    "profile_export_aiperf_sweep.*",
)
PHASE_MANIFEST = "phase_manifest.json"


def _same_run(summary: str) -> tuple[str, ...]:
    """The files holding the run of summary export `summary` again: its CSV twin and the
    per-request file it was computed from. GenAI-Perf names them after the per-request file
    (`<stem>.json` -> `<stem>_genai_perf.json`, `.csv`); AIPerf's are fixed names."""
    if summary.endswith("_genai_perf.json"):
        stem = summary.removesuffix("_genai_perf.json")
        return (f"{stem}_genai_perf.csv", f"{stem}.json")
    if summary == "profile_export_aiperf.json":
        return ("profile_export_aiperf.csv", "profile_export.jsonl")
    return ()


def _phase_exports(files: list[tuple[bytes, str]]) -> set[str]:
    """AIPerf 0.13 with a warm-up writes each phase's export again under `phases/<name>/`, listed
    in `phase_manifest.json`: the warm-up's is no result, and a profiling phase's repeats the
    run's own export beside the manifest (where that is missing, the phase's is kept)."""
    names = {name for _, name in files}
    dropped: set[str] = set()
    for content, name in files:
        if posixpath.basename(name) != PHASE_MANIFEST:
            continue
        dropped.add(posixpath.normpath(name))  # read here, never a run
        folder = posixpath.dirname(name)
        try:
            phases = json.loads(content).get("phases")
        except (ValueError, AttributeError):
            continue  # not AIPerf's manifest: nothing is dropped on its word
        run_export = posixpath.join(folder, "profile_export_aiperf.json")
        for phase in phases if isinstance(phases, list) else []:
            if not isinstance(phase, dict):
                continue
            if phase.get("phase_kind") != "warmup" and run_export not in names:
                continue
            for key in ("metrics_json", "metrics_csv"):
                if isinstance(path := phase.get(key), str):
                    dropped.add(posixpath.normpath(posixpath.join(folder, path)))
    return dropped


def arrange_folder(files: list[tuple[bytes, str]]) -> list[tuple[bytes, str]]:
    """One run per artifacts folder: its summary JSON, without the CSV and per-request files that
    hold the same requests (imported as well, the run would count twice, or be refused), and
    without AIPerf's per-phase copies (`_phase_exports`)."""
    dropped: set[tuple[str, str]] = set()
    for _, name in files:
        folder, base = posixpath.dirname(name), posixpath.basename(name)
        dropped.update((folder, twin) for twin in _same_run(base))
    phase_copies = _phase_exports(files)
    return [
        (content, name)
        for content, name in files
        if (posixpath.dirname(name), posixpath.basename(name)) not in dropped
        and posixpath.normpath(name) not in phase_copies
    ]


register(
    LoadTestFormat(
        name=FORMAT,
        priority=20,
        label="GenAI-Perf / AIPerf",
        parse=parse,
        looks_like=looks_like,
        required=("request_throughput",),
        signature=(
            "request_throughput",
            "request_latency",
            "time_to_first_token",
            "inter_token_latency",
            "output_token_throughput",
            "input_sequence_length",
            "output_sequence_length",
            "input_config",
        ),
        filename_hints=("genai", "profile_export", "aiperf"),
        side_files=SIDE_FILES,
        arrange_folder=arrange_folder,
    )
)
