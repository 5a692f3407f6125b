"""ray-project/llmperf `*_summary.json`: flat `results_<metric>_<stat>` keys, in seconds.

Statistics are `quantiles_p25..p99`, `mean`, `min`, `max`, `stddev`; some arrive as strings
("508"), which are read as numbers, and a string that is not a number is an error naming its key.
llmperf's inter-token latency is per request (total time / output tokens), the nearest it has to
TPOT, so it fills the tpot columns.
"""

from __future__ import annotations

from .base import (
    PERCENTILES,
    Ctx,
    Document,
    FieldRecorder,
    ParsedRun,
    epoch_to_datetime,
    mark_failed,
    present,
    product_or_none,
    rate_label,
    ratio_or_none,
    single_object,
)
from .registry import LoadTestFormat, register

FORMAT = "llmperf"
# llmperf metric -> (our metric, factor to ms)
LATENCIES = {
    "end_to_end_latency_s": ("e2e", 1000.0),
    "ttft_s": ("ttft", 1000.0),
    "inter_token_latency_s": ("tpot", 1000.0),
}
OTHER = ("request_output_throughput_token_per_s", "number_input_tokens", "number_output_tokens")
QUANTILES = ("p25", "p50", "p75", "p90", "p95", "p99", "p999")
STATS = ("mean", "min", "max", "stddev")


def looks_like(data: dict) -> bool:
    return "results_num_completed_requests" in data or any(
        key.startswith("results_ttft_s") for key in data
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    ctx = Ctx(FORMAT)
    recorder = FieldRecorder()
    fields, sources, put = recorder.fields, recorder.sources, recorder.put

    completed = ctx.integer(data, "results_num_completed_requests", required=True)

    stats = {}
    for name, (metric, scale) in LATENCIES.items():
        summary = _metric(ctx, data, name, scale)
        stats[metric] = summary
        for label in PERCENTILES:
            put(
                f"{metric}_{label}_ms",
                summary.get(label),
                f"results_{name}_quantiles_{label} (s -> ms)",
            )
    for name in OTHER:
        stats[name] = _metric(ctx, data, name, 1.0)

    prompt, output = stats["number_input_tokens"], stats["number_output_tokens"]
    for ours, summary, measured, configured in (
        ("prompt", prompt, "results_number_input_tokens", "input_tokens"),
        ("output", output, "results_number_output_tokens", "output_tokens"),
    ):
        if summary.get("mean") is not None:
            put(f"{ours}_tokens_mean", summary["mean"], f"{measured}_mean")
        else:
            put(f"{ours}_tokens_mean", ctx.num(data, f"mean_{configured}"), f"mean_{configured}")
        if summary.get("stddev") is not None:
            put(f"{ours}_tokens_std", summary["stddev"], f"{measured}_stddev")
        else:
            put(f"{ours}_tokens_std", ctx.num(data, f"stddev_{configured}"), f"stddev_{configured}")

    concurrency = ctx.integer(data, "num_concurrent_requests")
    put("concurrency", concurrency, "num_concurrent_requests")
    put("request_count", completed, "results_num_completed_requests")
    per_minute = ctx.num(data, "results_num_completed_requests_per_min")
    # llmperf computes both from totals over the run's wall time (not means of per-request rates).
    put(
        "qps",
        None if per_minute is None else per_minute / 60,
        "results_num_completed_requests_per_min / 60",
    )
    put(
        "output_tps",
        ctx.num(data, "results_mean_output_throughput_token_per_s"),
        "results_mean_output_throughput_token_per_s (total output tokens / wall time)",
    )
    # llmperf writes neither a duration nor an input rate; both follow from what it has.
    put(
        "duration_s",
        ratio_or_none(completed, fields["qps"]),
        "completed / completed-per-second (derived)",
    )
    put(
        "input_tps",
        product_or_none(fields["qps"], fields["prompt_tokens_mean"]),
        "requests per second x mean input tokens (derived)",
    )

    extra = {
        "model": ctx.text(data, "model"),
        "name": ctx.text(data, "name"),
        "requests_started": ctx.integer(data, "results_num_requests_started"),
        "error_rate": ctx.num(data, "results_error_rate"),
        "error_code_frequency": data.get("results_error_code_frequency"),
        "configured_input_tokens": {
            "mean": ctx.num(data, "mean_input_tokens"),
            "stddev": ctx.num(data, "stddev_input_tokens"),
        },
        "configured_output_tokens": {
            "mean": ctx.num(data, "mean_output_tokens"),
            "stddev": ctx.num(data, "stddev_output_tokens"),
        },
        "stats": {key: value for key, value in stats.items() if value},
        "notes": [
            "TPOT is llmperf's inter_token_latency: each request's end-to-end time over its "
            "output tokens, the first token's wait included (the nearest llmperf has to TPOT)"
        ],
    }
    errors = ctx.integer(data, "results_number_errors")
    if errors is not None:
        sources["errors"] = "results_number_errors"
    measured_at = epoch_to_datetime(ctx.at("timestamp"), ctx.num(data, "timestamp"))
    if measured_at is not None:
        sources["measured_at"] = "timestamp (Unix seconds)"
    run = ParsedRun(
        format=FORMAT,
        tool_version=ctx.text(data, "version"),
        # llmperf is closed-loop: a fixed number of concurrent requests, no rate limit.
        label=f"llmperf {rate_label(concurrency, None, True)}".strip(),
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=True,
        errors=errors,
        samples={},
        extra=present(extra),
        sources=sources,
    )
    return [mark_failed(run)]


def _metric(ctx: Ctx, data: dict, name: str, scale: float) -> dict[str, float]:
    out = {}
    for quantile in QUANTILES:
        value = ctx.num(data, f"results_{name}_quantiles_{quantile}")
        if value is not None:
            out[quantile] = value * scale
    for stat in STATS:
        value = ctx.num(data, f"results_{name}_{stat}")
        if value is not None:
            out[stat] = value * scale
    return out


def _first(*values: float | None) -> float | None:
    return next((value for value in values if value is not None), None)


register(
    LoadTestFormat(
        name=FORMAT,
        priority=40,
        label="ray-project llmperf",
        parse=parse,
        looks_like=looks_like,
        required=("results_num_completed_requests",),
        signature=(
            "results_num_completed_requests",
            "results_ttft_s_mean",
            "results_end_to_end_latency_s_mean",
            "results_inter_token_latency_s_mean",
            "results_number_errors",
            "num_concurrent_requests",
            "mean_input_tokens",
        ),
        filename_hints=("llmperf", "_summary"),
        # Beside each summary, llmperf writes every request's record (and its text): not a run.
        side_files=("*_individual_responses.json",),
        side_record_keys=("error_code", "ttft_s", "end_to_end_latency_s", "number_output_tokens"),
        run_file="*_summary.json",
    )
)
