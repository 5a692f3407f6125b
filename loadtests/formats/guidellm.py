"""guidellm benchmark reports: one run per entry of `benchmarks[]`.

Each metric is a distribution summary per request status (`successful`, `errored`, ...) with
`mean`, `median`, `std_dev`, `count`, `total_sum` and `percentiles`. `request_latency` is in
seconds; the `*_ms` metrics are in ms. guidellm's names differ from PerfHub's: its
`inter_token_latency_ms` is per request (latency - TTFT) / (output tokens - 1), which is what
PerfHub (and vLLM) call TPOT, so it fills the tpot columns; its `time_per_output_token_ms` is
latency / output tokens, the first token included, and is kept for display (checked on real
reports of 0.2, 0.5 and 0.8.1: each matches its formula on the requests' means). Layouts read
(docs/loadtest-formats.md has the table):

- 0.2/0.3: no `metadata`; `args.strategy`, `run_stats.requests_made`, `request_totals` on the
  benchmark; `percentiles` without `p50` (the `median` beside it stands in).
- 0.4+: `metadata`, `config.strategy`, `scheduler_metrics.requests_made`, and
  `metrics.request_totals` counting the measured window only (warm-up and cool-down excluded).

Rates are totals over the benchmark's `duration` (`total_sum` of the successful requests' token
counts); guidellm's `*_per_second` distributions are means of instantaneous rates, which can be
off by orders of magnitude, so they are kept for display only.
"""

from __future__ import annotations

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
from .folders import Files, drop_beside
from .guidellm_csv import csv_sources
from .registry import LoadTestFormat, register

FORMAT = "guidellm"
# guidellm metric -> (our metric, factor to ms). guidellm's ITL is PerfHub's TPOT; its own TPOT
# (latency / output tokens, the first token included) is kept as "latency per token".
LATENCIES = {
    "request_latency": ("e2e", 1000.0),
    "time_to_first_token_ms": ("ttft", 1.0),
    "inter_token_latency_ms": ("tpot", 1.0),
    "time_per_output_token_ms": ("latency_per_token", 1.0),
}
# The metrics kept for display only, not stored in a latency column.
DISPLAY_ONLY = ("latency_per_token",)
TPOT_BASIS = "guidellm's ITL: (latency - TTFT) / (output tokens - 1), PerfHub's TPOT"
SUMMARY_KEYS = ("mean", "median", "std_dev", "min", "max", "count", "total_sum")
STATUSES = ("successful", "errored", "incomplete")


def looks_like(data: dict) -> bool:
    return isinstance(data.get("benchmarks"), list) and (
        "metadata" in data
        or any(isinstance(b, dict) and "metrics" in b for b in data["benchmarks"])
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    ctx = Ctx(FORMAT)
    metadata = ctx.obj(data, "metadata", required=False) or {}
    benchmarks = ctx.array(data, "benchmarks")
    if not benchmarks:
        raise ctx.at("benchmarks").error("the report holds no benchmarks")
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    extra = {
        "report_version": metadata.get("version"),
        "target": config.get("target") or args.get("target"),
        "model": args.get("model"),
    }
    tool_version = ctx.at("metadata").text(metadata, "guidellm_version")
    runs = [
        mark_failed(
            _parse_benchmark(ctx.at("benchmarks").at(index), benchmark, tool_version, extra)
        )
        for index, benchmark in enumerate(benchmarks)
    ]
    if documents[0].origin == "csv":
        for run in runs:
            run.sources = csv_sources(run.sources)
            run.extra.setdefault("notes", []).append(CSV_NOTE)
    return runs


# What a run read from guidellm's CSV export lacks (guidellm_csv).
CSV_NOTE = (
    "read from guidellm's CSV export: no P99.9 and no per-request samples (the gate compares "
    "this run by its percentiles only), no guidellm warnings, and the start to the second in "
    "the client's local time (read as UTC); benchmarks.json has them"
)


def _parse_benchmark(ctx: Ctx, benchmark, tool_version: str | None, file_extra: dict) -> ParsedRun:
    if not isinstance(benchmark, dict):
        raise ctx.error("expected an object")
    metrics = ctx.obj(benchmark, "metrics")
    mctx = ctx.at("metrics")
    recorder = FieldRecorder()
    fields, sources, put = recorder.fields, recorder.sources, recorder.put

    concurrency, rate, rate_inf, strategy_name, strategy_key = _strategy(ctx, benchmark)
    cap = None
    if rate is not None:
        # A rate-driven run's `max_concurrency` is a cap on requests in flight, not the load:
        # the load is the rate, and the concurrency it produced is measured (below).
        cap, concurrency = concurrency, None
    totals, totals_key = _request_totals(ctx, benchmark, metrics)
    if strategy_name == "throughput" and concurrency:
        # Throughput mode sends every request as fast as the cap allows: a run of fewer
        # requests than the cap (guidellm's default 512) held them all at once, a burst.
        sent = sum(n for n in (totals.get(s) for s in STATUSES) if isinstance(n, int))
        if 0 < sent < concurrency:
            concurrency, strategy_key = sent, f"{strategy_key} (all {sent} requests at once)"
    put("concurrency", concurrency, strategy_key)
    put("request_rate", rate, f"{strategy_key}.rate (req/s)")

    latency_stats = {}
    for key, (metric, scale) in LATENCIES.items():
        summary = _summary(mctx, metrics, key, scale)
        if not summary:
            continue
        latency_stats[metric] = summary
        if metric in DISPLAY_ONLY:
            continue
        unit = " (s -> ms)" if scale != 1 else ""
        if metric == "tpot":
            unit = f"{unit}; {TPOT_BASIS}"
        for label in PERCENTILES:
            value = summary.get(label)
            source = f"metrics.{key}.successful.percentiles.{label}{unit}"
            if value is None and label == "p50":
                # 0.2/0.3 reports write the median beside percentiles that lack p50.
                value = summary.get("median")
                source = f"metrics.{key}.successful.median{unit}"
            put(f"{metric}_{label}_ms", value, source)

    prompt = _summary(mctx, metrics, "prompt_token_count", 1.0)
    output = _summary(mctx, metrics, "output_token_count", 1.0)
    for prefix, summary, key in (
        ("prompt", prompt, "prompt_token_count"),
        ("output", output, "output_token_count"),
    ):
        put(f"{prefix}_tokens_mean", summary.get("mean"), f"metrics.{key}.successful.mean")
        put(f"{prefix}_tokens_std", summary.get("std_dev"), f"metrics.{key}.successful.std_dev")

    successful = totals.get("successful")
    if successful is None:
        successful = latency_stats.get("e2e", {}).get("count")
        totals_key = "metrics.request_latency.successful.count"
    put("request_count", successful, f"{totals_key}.successful" if totals else totals_key)

    start = ctx.num(benchmark, "start_time")
    end = ctx.num(benchmark, "end_time")
    duration = ctx.num(benchmark, "duration")
    duration_key = "duration (s)"
    if duration is None and start is not None and end is not None:
        duration, duration_key = end - start, "end_time - start_time (s)"
    put("duration_s", duration, duration_key)

    if duration:
        if successful is not None:
            put("qps", successful / duration, f"successful requests / {duration_key}")
        for name, summary, key in (
            ("output_tps", output, "output_token_count"),
            ("input_tps", prompt, "prompt_token_count"),
        ):
            total = summary.get("total_sum")
            if total is not None:
                put(name, total / duration, f"metrics.{key}.successful.total_sum / duration")

    samples, sample_note = _request_samples(ctx, benchmark, successful)
    concurrency_seen = _summary(mctx, metrics, "request_concurrency", 1.0)
    config = benchmark.get("config") if isinstance(benchmark.get("config"), dict) else {}
    extra = {
        **file_extra,
        "benchmark_id": config.get("id_") or benchmark.get("id_"),
        "run_id": config.get("run_id") or benchmark.get("run_id"),
        "strategy": strategy_name,
        "arrival": arrival(strategy_name),
        "incomplete": totals.get("incomplete"),
        "concurrency_observed_mean": concurrency_seen.get("mean"),
        "concurrency_cap": cap,
        # guidellm's own means of instantaneous rates, for comparison only (never throughputs)
        "rate_means": {
            key: _mean(mctx, metrics, key)
            for key in (
                "requests_per_second",
                "prompt_tokens_per_second",
                "output_tokens_per_second",
                "tokens_per_second",
            )
            if _mean(mctx, metrics, key) is not None
        },
        "latency_ms": latency_stats,
        "notes": [*_tool_warnings(benchmark), *([sample_note] if sample_note else [])],
    }
    errored = totals.get("errored")
    if errored is not None:
        sources["errors"] = f"{totals_key}.errored"
    measured_at = epoch_to_datetime(ctx.at("start_time"), start)
    if measured_at is not None:
        sources["measured_at"] = "start_time (Unix seconds)"
    return ParsedRun(
        format=FORMAT,
        tool_version=tool_version,
        label=_label(strategy_name, concurrency, rate, rate_inf, concurrency_seen.get("mean"), cap),
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=errored,
        samples=samples,
        extra=present(extra),
        sources=sources,
    )


# A successful request's record -> (sample family, key, factor to ms). guidellm's per-request
# inter_token_latency_ms is (latency - TTFT) / (output tokens - 1): PerfHub's TPOT.
RECORD_KEYS = (
    ("ttft", "time_to_first_token_ms", 1.0),
    ("tpot", "inter_token_latency_ms", 1.0),
    ("e2e", "request_latency", 1000.0),
)


def _request_samples(
    ctx: Ctx, benchmark: dict, successful: int | None
) -> tuple[dict[str, list[float]], str | None]:
    """Per-request TTFT, TPOT and E2E from `requests.successful[]`, the records guidellm keeps,
    when it kept every successful request's: a sample of them (`--request-samples`) is not
    the run's distribution, so then none are used, and the note says so."""
    requests = benchmark.get("requests")
    records = requests.get("successful") if isinstance(requests, dict) else None
    if not isinstance(records, list) or not records or not successful:
        return {}, None
    if len(records) != successful:
        return {}, (
            f"the report holds the records of {len(records)} of {successful} successful "
            "requests (guidellm keeps a sample with --request-samples): no per-request "
            "distributions, so the gate compares this run by its percentiles only"
        )
    rctx = ctx.at("requests").at("successful")
    samples: dict[str, list[float]] = {family: [] for family, _, _ in RECORD_KEYS}
    for index, record in enumerate(records):
        if not isinstance(record, dict):
            raise rctx.at(index).error("expected an object")
        for family, key, scale in RECORD_KEYS:
            value = rctx.at(index).num(record, key)
            if value is not None:
                samples[family].append(value * scale)
    return {family: values for family, values in samples.items() if values}, None


def _tool_warnings(benchmark: dict) -> list[str]:
    """What guidellm (0.8+) itself warned about the benchmark ("the benchmark was likely
    bottlenecked by the data generation"), as it worded it."""
    warnings = benchmark.get("warnings")
    if not isinstance(warnings, list):
        return []
    notes = []
    for warning in warnings:
        if isinstance(warning, dict) and isinstance(warning.get("message"), str):
            note = warning.get("note") if isinstance(warning.get("note"), str) else ""
            notes.append(f"guidellm warned: {warning['message']} {note}".strip()[:500])
    return notes


def _label(
    strategy: str,
    concurrency: int | None,
    rate: float | None,
    rate_inf: bool,
    observed: float | None,
    cap: int | None,
) -> str:
    """ "guidellm constant 4 req/s, observed concurrency 10.1 (cap 512)": a rate run's
    concurrency is what it measured, and its `max_concurrency` is named as the cap it is."""
    label = f"guidellm {strategy} {rate_label(concurrency, rate, rate_inf)}".strip()
    if rate is not None and observed is not None:
        label += f", observed concurrency {observed:.1f}"
    if cap is not None:
        label += f" (cap {cap})"
    return label


def _strategy(ctx: Ctx, benchmark: dict) -> tuple[int | None, float | None, bool, str, str]:
    """(concurrency, rate, rate is unlimited, strategy type, key) from config or args."""
    holder_key = "config" if isinstance(benchmark.get("config"), dict) else "args"
    holder = ctx.obj(benchmark, holder_key, required=False) or {}
    key = f"{holder_key}.strategy"
    sctx = ctx.at(holder_key).at("strategy")
    strategy = ctx.at(holder_key).obj(holder, "strategy", required=False)
    if strategy is None:
        return None, None, False, "unknown", key
    kind = str(strategy.get("type_") or strategy.get("type") or "unknown")
    concurrency = sctx.integer(strategy, "max_concurrency")
    if kind == "synchronous":
        return 1, None, True, kind, f"{key}.type_ (synchronous: 1)"
    if kind == "concurrent":
        streams = sctx.integer(strategy, "streams")
        return streams or concurrency, None, True, kind, f"{key}.streams"
    if kind == "throughput":
        return concurrency, None, True, kind, f"{key}.max_concurrency"
    # constant / poisson: an arrival rate in requests per second.
    return concurrency, sctx.num(strategy, "rate", required=True), False, kind, key


def _summary(ctx: Ctx, metrics: dict, key: str, scale: float) -> dict:
    """The `successful` distribution of a metric, scaled (seconds -> ms where needed)."""
    metric = ctx.obj(metrics, key, required=False)
    if metric is None:
        return {}
    mctx = ctx.at(key)
    successful = mctx.obj(metric, "successful")
    sctx = mctx.at("successful")
    out = {}
    for stat in SUMMARY_KEYS:
        value = sctx.num(successful, stat)
        if value is None:
            continue
        if stat == "count":
            out[stat] = int(value)
        elif stat == "total_sum":
            out[stat] = value  # a token or request total: never scaled to ms
        else:
            out[stat] = value * scale
    percentiles = sctx.obj(successful, "percentiles", required=False) or {}
    for label in PERCENTILES:
        value = sctx.at("percentiles").num(percentiles, label)
        if value is not None:
            out[label] = value * scale
    return out


def _mean(ctx: Ctx, metrics: dict, key: str) -> float | None:
    return _summary(ctx, metrics, key, 1.0).get("mean")


def _request_totals(ctx: Ctx, benchmark: dict, metrics: dict) -> tuple[dict[str, int], str]:
    """Request counts by status, from the most precise place the report's version has."""
    places = (
        ("metrics.request_totals", metrics, "request_totals"),
        ("request_totals", benchmark, "request_totals"),
        ("scheduler_metrics.requests_made", benchmark.get("scheduler_metrics"), "requests_made"),
        ("run_stats.requests_made", benchmark.get("run_stats"), "requests_made"),
    )
    for name, holder, key in places:
        if not isinstance(holder, dict) or not isinstance(holder.get(key), dict):
            continue
        tctx = ctx.at(name)
        counts = {status: tctx.integer(holder[key], status) for status in STATUSES}
        counts = {status: count for status, count in counts.items() if count is not None}
        if counts:
            return counts, name
    return {}, ""


def arrange_folder(files: Files) -> Files:
    """guidellm writes one report in every format asked (`--outputs json,yaml,csv,html`): where
    a folder holds the JSON, its YAML and CSV copies are the same runs."""
    copies = ("benchmarks.yaml", "benchmarks.yml", "benchmarks.csv")
    return drop_beside(files, drop=copies, beside="benchmarks.json")


register(
    LoadTestFormat(
        name=FORMAT,
        priority=30,
        label="guidellm",
        parse=parse,
        looks_like=looks_like,
        required=("benchmarks",),
        signature=("benchmarks", "metadata", "args", "config"),
        filename_hints=("guidellm", "benchmarks"),
        arrange_folder=arrange_folder,
    )
)
