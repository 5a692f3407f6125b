"""`vllm bench serve --save-result` (one JSON object) and `--append-result` (JSON lines).

Keys as vLLM writes them (benchmarks/benchmark_serving.py, vllm/benchmarks/serve.py):
`p{P}_{metric}_ms` for each `--metric-percentiles` value (99.9 -> "p99.9_ttft_ms"), `e2el` for
end-to-end latency, `request_rate` as the string "inf", per-request `ttfts` and `itls` in seconds,
`errors` as one string per request ("" when it succeeded). Older versions wrote
`request_goodput:` (with the colon), no `max_concurrency` and no `failed`.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime

from .base import (
    Ctx,
    Document,
    ParsedRun,
    empty_fields,
    mean_std,
    rate_label,
)

FORMAT = "vllm-bench"
REQUIRED = ("completed", "duration", "request_throughput")

# vLLM's metric name -> ours. ITL is kept for display; TPOT fills the tpot columns.
METRICS = {"ttft": "ttft", "tpot": "tpot", "e2el": "e2e", "itl": "itl"}
# Our percentile label -> the spelling vLLM uses in keys.
PERCENTILE_KEYS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}


def looks_like(data: dict) -> bool:
    return "completed" in data and (
        "request_throughput" in data or any(key.endswith("_ttft_ms") for key in data)
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    runs = []
    for document in documents:
        ctx = Ctx(FORMAT, line=document.line)
        if not isinstance(document.data, dict):
            raise ctx.error("expected a JSON object")
        runs.append(_parse_run(ctx, document.data))
    return runs


def _parse_run(ctx: Ctx, data: dict) -> ParsedRun:
    for key in REQUIRED:
        if data.get(key) is None:
            raise ctx.error(f"missing key {key!r}")

    fields = empty_fields()
    concurrency = ctx.integer(data, "max_concurrency")
    rate, rate_inf = _request_rate(ctx, data)
    fields["concurrency"] = concurrency
    fields["request_rate"] = rate

    completed = ctx.integer(data, "completed", required=True)
    duration = ctx.num(data, "duration", required=True)
    fields["request_count"] = completed
    fields["duration_s"] = duration
    fields["qps"] = ctx.num(data, "request_throughput", required=True)
    fields["output_tps"] = ctx.num(data, "output_throughput")
    fields["input_tps"] = _input_tps(ctx, data, duration)

    succeeded = _success_mask(ctx, data)
    input_lens = _per_request(ctx, data, "input_lens", succeeded)
    output_lens = _per_request(ctx, data, "output_lens", succeeded)
    total_input = ctx.integer(data, "total_input_tokens")
    total_output = ctx.integer(data, "total_output_tokens")
    fields["prompt_tokens_mean"], fields["prompt_tokens_std"] = _length_stats(
        input_lens, total_input, completed
    )
    fields["output_tokens_mean"], fields["output_tokens_std"] = _length_stats(
        output_lens, total_output, completed
    )

    stats = {}
    for vllm_name, name in METRICS.items():
        percentiles = {
            ours: ctx.num(data, f"{theirs}_{vllm_name}_ms")
            for ours, theirs in PERCENTILE_KEYS.items()
        }
        if name != "itl":
            for label, value in percentiles.items():
                fields[f"{name}_{label}_ms"] = value
        summary = {
            "mean": ctx.num(data, f"mean_{vllm_name}_ms"),
            "median": ctx.num(data, f"median_{vllm_name}_ms"),
            "std": ctx.num(data, f"std_{vllm_name}_ms"),
            **(percentiles if name == "itl" else {}),
        }
        if any(value is not None for value in summary.values()):
            stats[name] = summary

    samples = _samples(ctx, data, succeeded, output_lens)
    measured_at = _date(ctx, data)
    file_label = ctx.text(data, "label")
    label = f"vllm bench {rate_label(concurrency, rate, rate_inf)}".strip()
    if file_label:
        label = f"{label} ({file_label})"

    goodput_key = "request_goodput" if "request_goodput" in data else "request_goodput:"
    extra = {
        "model_id": ctx.text(data, "model_id"),
        "tokenizer_id": ctx.text(data, "tokenizer_id"),
        "backend": ctx.text(data, "backend"),
        "endpoint_type": ctx.text(data, "endpoint_type"),
        "label": file_label,
        "num_prompts": ctx.integer(data, "num_prompts"),
        "burstiness": ctx.num(data, "burstiness"),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "total_token_throughput": ctx.num(data, "total_token_throughput"),
        "max_output_tokens_per_s": ctx.num(data, "max_output_tokens_per_s"),
        "max_concurrent_requests": ctx.integer(data, "max_concurrent_requests"),
        "goodput_rps": ctx.num(data, goodput_key),
        "latency_ms": stats,
        "date_timezone": "UTC (assumed: vLLM writes local time without a zone)"
        if measured_at
        else None,
    }
    return ParsedRun(
        format=FORMAT,
        tool_version=ctx.text(data, "vllm_version"),
        label=label,
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=_errors(ctx, data, succeeded, completed),
        samples=samples,
        extra={key: value for key, value in extra.items() if value not in (None, {})},
    )


def _request_rate(ctx: Ctx, data: dict) -> tuple[float | None, bool]:
    value = data.get("request_rate")
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return None, True
    if isinstance(value, float) and math.isinf(value):  # JSON `Infinity`
        return None, True
    return ctx.num(data, "request_rate"), False


def _input_tps(ctx: Ctx, data: dict, duration: float | None) -> float | None:
    total = ctx.num(data, "total_token_throughput")
    output = ctx.num(data, "output_throughput")
    if total is not None and output is not None:
        return max(total - output, 0.0)
    total_input = ctx.num(data, "total_input_tokens")
    if total_input is not None and duration:
        return total_input / duration
    return None


def _success_mask(ctx: Ctx, data: dict) -> list[bool] | None:
    """One flag per request from `errors` ("" = succeeded); None when the file has no list."""
    errors = ctx.array(data, "errors", required=False)
    if not errors:
        return None
    return [not message for message in errors]


def _per_request(
    ctx: Ctx, data: dict, key: str, succeeded: list[bool] | None
) -> list[float] | None:
    values = ctx.array(data, key, required=False)
    if not values:
        return None
    numbers = ctx.at(key).numbers(values)
    if succeeded is not None and len(succeeded) == len(numbers):
        numbers = [value for value, ok in zip(numbers, succeeded, strict=True) if ok]
    return [value for value in numbers if value is not None]


def _length_stats(
    lens: list[float] | None, total: float | None, completed: int | None
) -> tuple[float | None, float | None]:
    if lens:
        return mean_std(lens)
    if total is not None and completed:
        return total / completed, None
    return None, None


def _samples(
    ctx: Ctx, data: dict, succeeded: list[bool] | None, output_lens: list[float] | None
) -> dict[str, list[float]]:
    """Per-request arrays in ms, successful requests only (failed ones carry ttft 0)."""
    ttfts = ctx.array(data, "ttfts", required=False) or []
    itls = ctx.array(data, "itls", required=False) or []
    ttfts = ctx.at("ttfts").numbers(ttfts)
    per_request_itls = []
    for index, item in enumerate(itls):
        if not isinstance(item, list):
            raise ctx.at("itls").at(index).error("expected a list of seconds")
        per_request_itls.append(ctx.at("itls").at(index).numbers(item))

    def keep(values: list) -> list:
        if succeeded is not None and len(succeeded) == len(values):
            return [value for value, ok in zip(values, succeeded, strict=True) if ok]
        return values

    samples: dict[str, list[float]] = {}
    ttft_ms = [t * 1000 for t in keep(ttfts) if t is not None]
    if ttft_ms:
        samples["ttft"] = ttft_ms
    kept_itls = [[gap for gap in gaps if gap is not None] for gaps in keep(per_request_itls)]
    itl_ms = [gap * 1000 for gaps in kept_itls for gap in gaps]
    if itl_ms:
        samples["itl"] = itl_ms
    # vLLM's latency is ttft + sum(itl), and its TPOT is (latency - ttft) / (output_len - 1):
    # with both arrays per request, e2e and TPOT samples follow exactly.
    kept_ttfts = keep(ttfts)
    if kept_itls and len(kept_itls) == len(kept_ttfts):
        e2e, tpot = [], []
        lens = output_lens if output_lens and len(output_lens) == len(kept_itls) else None
        for i, (ttft, gaps) in enumerate(zip(kept_ttfts, kept_itls, strict=True)):
            if ttft is None or not gaps:
                continue
            e2e.append((ttft + sum(gaps)) * 1000)
            tokens = lens[i] if lens else len(gaps) + 1
            if tokens > 1:
                tpot.append(sum(gaps) * 1000 / (tokens - 1))
        if e2e:
            samples["e2e"] = e2e
        if tpot:
            samples["tpot"] = tpot
    return samples


def _errors(
    ctx: Ctx, data: dict, succeeded: list[bool] | None, completed: int | None
) -> int | None:
    failed = ctx.integer(data, "failed")
    if failed is not None:
        return failed
    if succeeded is not None:
        return succeeded.count(False)
    prompts = ctx.integer(data, "num_prompts")
    if prompts is not None and completed is not None:
        return max(prompts - completed, 0)
    return None


def _date(ctx: Ctx, data: dict) -> datetime | None:
    value = data.get("date")
    if value is None:
        return None
    try:
        return datetime.strptime(str(value), "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        raise ctx.at("date").error(f"expected YYYYMMDD-HHMMSS, got {value!r}") from None
