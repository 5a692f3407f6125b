"""NVIDIA GenAI-Perf `profile_export_genai_perf.json`.

Each metric is `{unit, avg, p1..p99, min, max, std}`; there is no p99.9, so p999 stays missing.
GenAI-Perf's `inter_token_latency` is per request (latency - TTFT) / (output tokens - 1), which is
what PerfHub calls TPOT, so it fills the tpot columns. `telemetry_stats` holds one entry per GPU.
"""

from __future__ import annotations

from .base import (
    PERCENTILES,
    Ctx,
    Document,
    ParsedRun,
    empty_fields,
    product_or_none,
    rate_label,
    ratio_or_none,
    single_object,
)

FORMAT = "genai-perf"
LATENCIES = {"request_latency": "e2e", "time_to_first_token": "ttft", "inter_token_latency": "tpot"}
# Everything else with a distribution, kept for display.
OTHER_STATS = ("time_to_second_token", "output_token_throughput_per_user")
TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}
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
    fields = empty_fields()
    derived = []

    qps = _avg(ctx, data, "request_throughput", required=True)
    fields["qps"] = qps
    fields["output_tps"] = _avg(ctx, data, "output_token_throughput")
    count = _avg(ctx, data, "request_count")
    fields["request_count"] = None if count is None else round(count)

    stats = {}
    for name in ("input_sequence_length", "output_sequence_length"):
        stats[name] = _stats(ctx, data, name, scale=1.0)
    prompt, output = stats["input_sequence_length"], stats["output_sequence_length"]
    fields["prompt_tokens_mean"], fields["prompt_tokens_std"] = prompt.get("avg"), prompt.get("std")
    fields["output_tokens_mean"], fields["output_tokens_std"] = output.get("avg"), output.get("std")

    # The export has neither a duration nor an input rate; both follow from what it has.
    fields["input_tps"] = product_or_none(qps, fields["prompt_tokens_mean"])
    if fields["input_tps"] is not None:
        derived.append("input_tps")
    fields["duration_s"] = ratio_or_none(count, qps)
    if fields["duration_s"] is not None:
        derived.append("duration_s")

    for key, metric in LATENCIES.items():
        unit = _unit(ctx, data, key)
        summary = _stats(ctx, data, key, scale=TO_MS[unit] if unit else 1.0)
        stats[key] = summary
        for label in PERCENTILES:
            fields[f"{metric}_{label}_ms"] = summary.get(label)
    for key in OTHER_STATS:
        stats[key] = _stats(ctx, data, key, scale=TO_MS.get(_unit(ctx, data, key) or "", 1.0))

    telemetry = _telemetry(ctx, data)
    fields["gpu_util"] = telemetry.pop("_gpu_util", None)

    config = ctx.obj(data, "input_config", required=False) or {}
    config_ctx = ctx.at("input_config")
    stimulus = _stimulus(config_ctx, config)
    concurrency = config_ctx.integer(stimulus, "concurrency")
    rate = config_ctx.num(stimulus, "request_rate")
    # Concurrency mode is closed-loop: no arrival rate limits the load.
    rate_inf = rate is None and concurrency is not None
    fields["concurrency"] = concurrency
    fields["request_rate"] = rate

    extra = {
        "model": _model(config),
        "endpoint_type": config_ctx.text(config, "endpoint_type"),
        "service_kind": config_ctx.text(config, "service_kind"),
        "streaming": config.get("streaming"),
        "stats": {key: value for key, value in stats.items() if value},
        "telemetry": telemetry,
        "derived": derived,
        "notes": ["tpot_* are GenAI-Perf's inter_token_latency (per-request TPOT)"],
    }
    return [
        ParsedRun(
            format=FORMAT,
            tool_version=config_ctx.text(config, "genai_perf_version"),
            label=f"genai-perf {rate_label(concurrency, rate, rate_inf)}".strip(),
            measured_at=None,
            fields=fields,
            request_rate_inf=rate_inf,
            errors=None,
            samples={},
            extra={key: value for key, value in extra.items() if value not in (None, {}, [])},
        )
    ]


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


def _telemetry(ctx: Ctx, data: dict) -> dict:
    """Per-GPU averages by metric; GPU utilization (percent) becomes a 0-1 ratio."""
    telemetry = ctx.obj(data, "telemetry_stats", required=False)
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
        if metric == "gpu_utilization" and gpus:
            # Mean over GPUs of time-averaged utilization: a mean of means, not a percentile.
            mean = sum(gpus.values()) / len(gpus)
            ratio = mean / 100 if unit == "%" or mean > 1 else mean
            if ratio > 1:
                raise tctx.at(metric).error(f"utilization above 100%: {mean!r}")
            out["_gpu_util"] = ratio
    return out


def _stimulus(ctx: Ctx, config: dict) -> dict:
    """Concurrency/rate sit in input_config (older) or input_config.perf_analyzer.stimulus."""
    analyzer = config.get("perf_analyzer")
    if isinstance(analyzer, dict) and isinstance(analyzer.get("stimulus"), dict):
        return {**config, **analyzer["stimulus"]}
    return config


def _model(config: dict) -> str | None:
    model = config.get("model") or config.get("model_names")
    if isinstance(model, list):
        return ", ".join(str(name) for name in model) or None
    return None if model is None else str(model)
