"""guidellm benchmark reports (`metadata.version` 2): one run per entry of `benchmarks[]`.

Each metric is a distribution summary per request status (`successful`, `errored`, ...) with
`mean`, `std_dev`, `min`, `max`, `count` and `percentiles.p001..p999`. `request_latency` is in
seconds; the `*_ms` metrics are in ms. guidellm reports TPOT and ITL separately: TPOT fills the
tpot columns and ITL is kept for display.
"""

from __future__ import annotations

from .base import (
    PERCENTILES,
    Ctx,
    Document,
    ParsedRun,
    empty_fields,
    epoch_to_datetime,
    rate_label,
    single_object,
)

FORMAT = "guidellm"
# guidellm metric -> (our metric, factor to ms)
LATENCIES = {
    "request_latency": ("e2e", 1000.0),
    "time_to_first_token_ms": ("ttft", 1.0),
    "time_per_output_token_ms": ("tpot", 1.0),
    "inter_token_latency_ms": ("itl", 1.0),
}
SUMMARY_KEYS = ("mean", "median", "std_dev", "min", "max", "count")


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
    extra = {
        "report_version": metadata.get("version"),
        "target": (data.get("config") or {}).get("target")
        if isinstance(data.get("config"), dict)
        else None,
    }
    tool_version = ctx.at("metadata").text(metadata, "guidellm_version")
    return [
        _parse_benchmark(ctx.at("benchmarks").at(index), benchmark, tool_version, extra)
        for index, benchmark in enumerate(benchmarks)
    ]


def _parse_benchmark(ctx: Ctx, benchmark, tool_version: str | None, file_extra: dict) -> ParsedRun:
    if not isinstance(benchmark, dict):
        raise ctx.error("expected an object")
    metrics = ctx.obj(benchmark, "metrics")
    mctx = ctx.at("metrics")
    fields = empty_fields()

    concurrency, rate, rate_inf, strategy_name = _strategy(ctx, benchmark)
    fields["concurrency"] = concurrency
    fields["request_rate"] = rate

    latency_stats = {}
    for key, (metric, scale) in LATENCIES.items():
        summary = _summary(mctx, metrics, key, scale)
        if not summary:
            continue
        latency_stats[metric] = summary
        if metric != "itl":
            for label in PERCENTILES:
                fields[f"{metric}_{label}_ms"] = summary.get(label)

    prompt = _summary(mctx, metrics, "prompt_token_count", 1.0)
    output = _summary(mctx, metrics, "output_token_count", 1.0)
    fields["prompt_tokens_mean"], fields["prompt_tokens_std"] = (
        prompt.get("mean"),
        prompt.get("std_dev"),
    )
    fields["output_tokens_mean"], fields["output_tokens_std"] = (
        output.get("mean"),
        output.get("std_dev"),
    )

    fields["qps"] = _mean(mctx, metrics, "requests_per_second")
    fields["output_tps"] = _mean(mctx, metrics, "output_tokens_per_second")
    derived = []
    fields["input_tps"] = _mean(mctx, metrics, "prompt_tokens_per_second")
    total_tps = _mean(mctx, metrics, "tokens_per_second")
    if fields["input_tps"] is None and total_tps is not None and fields["output_tps"] is not None:
        # tokens_per_second counts prompt and output tokens together.
        fields["input_tps"] = max(total_tps - fields["output_tps"], 0.0)
        derived.append("input_tps")

    made = _requests_made(ctx, benchmark)
    latency_count = latency_stats.get("e2e", {}).get("count")
    fields["request_count"] = made.get("successful", latency_count)
    if fields["request_count"] is not None:
        fields["request_count"] = int(fields["request_count"])

    start = ctx.num(benchmark, "start_time")
    end = ctx.num(benchmark, "end_time")
    duration = ctx.num(benchmark, "duration")
    if duration is None and start is not None and end is not None:
        duration = end - start
    fields["duration_s"] = duration

    concurrency_seen = _summary(mctx, metrics, "request_concurrency", 1.0)
    config = benchmark.get("config") if isinstance(benchmark.get("config"), dict) else {}
    extra = {
        **file_extra,
        "benchmark_id": config.get("id_") or benchmark.get("id_"),
        "run_id": config.get("run_id") or benchmark.get("run_id"),
        "strategy": strategy_name,
        "incomplete": made.get("incomplete"),
        "concurrency_observed_mean": concurrency_seen.get("mean"),
        "tokens_per_second": total_tps,
        "latency_ms": latency_stats,
        "derived": derived,
    }
    return ParsedRun(
        format=FORMAT,
        tool_version=tool_version,
        label=f"guidellm {strategy_name} {rate_label(concurrency, rate, rate_inf)}".strip(),
        measured_at=epoch_to_datetime(ctx.at("start_time"), start),
        fields=fields,
        request_rate_inf=rate_inf,
        errors=made.get("errored"),
        samples={},
        extra={key: value for key, value in extra.items() if value not in (None, {}, [])},
    )


def _strategy(ctx: Ctx, benchmark: dict) -> tuple[int | None, float | None, bool, str]:
    """(concurrency, rate, rate is unlimited, strategy type) from config.strategy or args."""
    holder_key = "config" if isinstance(benchmark.get("config"), dict) else "args"
    holder = ctx.obj(benchmark, holder_key, required=False) or {}
    sctx = ctx.at(holder_key).at("strategy")
    strategy = ctx.at(holder_key).obj(holder, "strategy", required=False)
    if strategy is None:
        return None, None, False, "unknown"
    kind = str(strategy.get("type_") or strategy.get("type") or "unknown")
    concurrency = sctx.integer(strategy, "max_concurrency")
    if kind == "synchronous":
        return 1, None, True, kind
    if kind == "concurrent":
        return sctx.integer(strategy, "streams") or concurrency, None, True, kind
    if kind == "throughput":
        return concurrency, None, True, kind
    # constant / poisson: an arrival rate in requests per second.
    return concurrency, sctx.num(strategy, "rate", required=True), False, kind


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
        if value is not None:
            out[stat] = int(value) if stat == "count" else value * scale
    percentiles = sctx.obj(successful, "percentiles", required=False) or {}
    for label in PERCENTILES:
        value = sctx.at("percentiles").num(percentiles, label)
        if value is not None:
            out[label] = value * scale
    return out


def _mean(ctx: Ctx, metrics: dict, key: str) -> float | None:
    return _summary(ctx, metrics, key, 1.0).get("mean")


def _requests_made(ctx: Ctx, benchmark: dict) -> dict[str, int]:
    scheduler = ctx.obj(benchmark, "scheduler_metrics", required=False) or {}
    made = ctx.at("scheduler_metrics").obj(scheduler, "requests_made", required=False) or {}
    mctx = ctx.at("scheduler_metrics").at("requests_made")
    counts = {
        status: mctx.integer(made, status) for status in ("successful", "errored", "incomplete")
    }
    return {status: count for status, count in counts.items() if count is not None}
