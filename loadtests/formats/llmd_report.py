"""llm-d benchmark reports: the standard file llm-d-benchmark writes beside each harness's own
output (`benchmark_report,_<file>.yaml` for version 0.1, `benchmark_report_v0.2,_<file>.yaml`
for 0.2 and 0.2.1), one run each, converted from vLLM's `bench serve`, inference-perf,
guidellm or AIPerf output. YAML or JSON.

- 0.2 / 0.2.1: `run` (uid, `time.start`, `time.duration` as ISO 8601), `scenario.stack[]` (the
  serving components: model, accelerator, replicas), `scenario.load.standardized` (`tool`,
  `stage`, `concurrency`, `rate_qps`, either `.inf`), `results.request_performance.aggregate`
  (`requests`, `latency`, `throughput`: statistics with their `units`).
- 0.1: `scenario` (`model`, `host`, `platform`, `load.name` and the harness's own `load.args`),
  `metrics` (`time` in Unix seconds, `requests`, `latency`, plain `throughput` numbers).

Every latency is a statistic with its unit (`s`, `ms`, `s/token`, `ms/token`) and percentiles
`p50` .. `p99p9`. What each is depends on the harness that measured it, and the converter
copies the harness's names: guidellm's `time_per_output_token` is latency / output tokens (the
first token included) and its `inter_token_latency` is (latency - TTFT) / (tokens - 1); AIPerf's
`inter_token_latency` is that same per-request figure, and it writes no TPOT. So PerfHub's TPOT
is `inter_token_latency` for those two and `time_per_output_token` for the others (vLLM's and
inference-perf's TPOT, both excluding the first token).

`requests.total` counts every request sent (for vLLM 0.1, the completed ones; no `failures`
then), `failures` the failed ones and `incomplete` those cut off: PerfHub's request count is
total - failures - incomplete. AIPerf's converter writes the number of *kinds* of error as
`failures`, so for AIPerf it is not read as a count. A throughput is a total over the duration:
a statistic with a spread (guidellm's instantaneous rates) is not used where the duration and
the counts give it.
"""

from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from fnmatch import fnmatchcase

import msgspec

from .base import (
    SHARED_TIME_NOTE,
    Ctx,
    Document,
    FieldRecorder,
    ParsedRun,
    epoch_to_datetime,
    mark_failed,
    present,
    rate_label,
    single_object,
)
from .folders import Files
from .registry import LoadTestFormat, register

FORMAT = "llm-d-report"
VERSIONS = ("0.1", "0.2", "0.2.1")
# The report's percentile keys for PerfHub's labels.
PERCENTILE_KEYS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99p9"}
TIME_UNITS = {"s": 1000.0, "ms": 1.0}
TOKEN_TIME_UNITS = {"s/token": 1000.0, "ms/token": 1.0}
# Harnesses whose `inter_token_latency` is per request (latency - TTFT) / (tokens - 1).
ITL_IS_TPOT = ("guidellm", "aiperf")
# A statistic with any of these is a distribution, not one total.
SPREAD_KEYS = ("stddev", "min", "max", "p50", "p90", "p99")


def version_of(data: dict) -> str | None:
    # YAML reads an unquoted `version: 0.2` as a number.
    version = data.get("version")
    if isinstance(version, float | int) and not isinstance(version, bool):
        version = f"{version:g}"
    return version if isinstance(version, str) else None


def looks_like(data: dict) -> bool:
    if version_of(data) not in VERSIONS or not isinstance(data.get("scenario"), dict):
        return False
    return isinstance(data.get("results"), dict) or isinstance(data.get("metrics"), dict)


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    ctx = Ctx(FORMAT)
    version = version_of(data)
    if version not in VERSIONS:
        raise ctx.at("version").error(
            f"unknown report version {data.get('version')!r}: expected one of {', '.join(VERSIONS)}"
        )
    report = _v01(ctx, data) if version == "0.1" else _v02(ctx, data)
    return [mark_failed(_run(ctx, version, report))]


@dataclass
class _Report:
    """What either version says, under one set of names, with where each came from."""

    tool: str = "unknown"
    tool_version: str | None = None
    stage: int | None = None
    concurrency: float | None = None  # math.inf for "unbounded"
    concurrency_key: str = ""
    rate: float | None = None
    rate_key: str = ""
    requests: dict = field(default_factory=dict)
    requests_key: str = ""
    latency: dict = field(default_factory=dict)
    latency_key: str = ""
    # name -> (value, a distribution rather than one total, key)
    throughput: dict[str, tuple[float, bool, str]] = field(default_factory=dict)
    duration: tuple[float, str] | None = None
    measured_at: tuple[datetime, str] | None = None
    extra: dict = field(default_factory=dict)


def _v02(ctx: Ctx, data: dict) -> _Report:
    report = _Report()
    results = ctx.obj(data, "results")
    rctx = ctx.at("results")
    performance = rctx.obj(results, "request_performance", required=False)
    if performance is None:
        if isinstance(results.get("session_performance"), dict):
            raise rctx.error(
                "this is a session report (multi-turn sessions, no request statistics); import "
                "the stage's request report, benchmark_report_v0.2,_stage_<N>_lifecycle_metrics"
                ".json.yaml"
            )
        raise rctx.error("missing key 'request_performance': the report holds no request results")
    pctx = rctx.at("request_performance")
    aggregate = pctx.obj(performance, "aggregate")
    actx = pctx.at("aggregate")
    report.requests = actx.obj(aggregate, "requests")
    report.requests_key = "results.request_performance.aggregate.requests"
    report.latency = actx.obj(aggregate, "latency", required=False) or {}
    report.latency_key = "results.request_performance.aggregate.latency"
    throughput = actx.obj(aggregate, "throughput", required=False) or {}
    tctx = actx.at("throughput")
    for name in ("request_rate", "output_token_rate", "input_token_rate", "total_token_rate"):
        stat = tctx.obj(throughput, name, required=False)
        if stat is not None:
            sctx = tctx.at(name)
            value = sctx.num(stat, "mean", required=True)
            spread = any(stat.get(key) is not None for key in SPREAD_KEYS)
            key = f"results.request_performance.aggregate.throughput.{name}.mean"
            report.throughput[name] = (value, spread, key)

    scenario = ctx.obj(data, "scenario")
    sctx = ctx.at("scenario")
    load = sctx.obj(scenario, "load", required=False) or {}
    lctx = sctx.at("load")
    standardized = lctx.obj(load, "standardized", required=False) or {}
    stdctx = lctx.at("standardized")
    key = "scenario.load.standardized"
    report.tool = stdctx.text(standardized, "tool") or "unknown"
    report.tool_version = stdctx.text(standardized, "tool_version") or None
    report.stage = stdctx.integer(standardized, "stage")
    report.concurrency = _load_number(stdctx, standardized, "concurrency")
    report.concurrency_key = f"{key}.concurrency"
    report.rate = _load_number(stdctx, standardized, "rate_qps")
    report.rate_key = f"{key}.rate_qps"
    report.extra["stack"] = _stack(sctx, scenario)

    run = ctx.obj(data, "run", required=False) or {}
    runctx = ctx.at("run")
    times = runctx.obj(run, "time", required=False) or {}
    timectx = runctx.at("time")
    duration = _iso_duration(timectx, times.get("duration"))
    if duration is not None:
        report.duration = (duration, "run.time.duration (ISO 8601)")
    for name in ("start", "end"):
        when = _timestamp(timectx.at(name), times.get(name))
        if when is not None:
            note = "" if name == "start" else " (the run's end: the report has no start)"
            report.measured_at = (when, f"run.time.{name}{note}")
            break
    report.extra.update(
        run_uid=runctx.text(run, "uid"),
        experiment=runctx.text(run, "description") or runctx.text(run, "eid"),
    )
    return report


def _v01(ctx: Ctx, data: dict) -> _Report:
    report = _Report()
    metrics = ctx.obj(data, "metrics")
    mctx = ctx.at("metrics")
    report.requests = mctx.obj(metrics, "requests")
    report.requests_key = "metrics.requests"
    report.latency = mctx.obj(metrics, "latency", required=False) or {}
    report.latency_key = "metrics.latency"
    throughput = mctx.obj(metrics, "throughput", required=False) or {}
    tctx = mctx.at("throughput")
    names = {
        "request_rate": "requests_per_sec",
        "output_token_rate": "output_tokens_per_sec",
        "input_token_rate": "input_tokens_per_sec",
        "total_token_rate": "total_tokens_per_sec",
    }
    for name, key in names.items():
        value = tctx.num(throughput, key)
        if value is not None:
            report.throughput[name] = (value, False, f"metrics.throughput.{key}")
    times = mctx.obj(metrics, "time", required=False) or {}
    timectx = mctx.at("time")
    duration = timectx.num(times, "duration")
    if duration is not None:
        report.duration = (duration, "metrics.time.duration (s)")
    start = epoch_to_datetime(timectx.at("start"), timectx.num(times, "start"))
    if start is not None:
        report.measured_at = (start, "metrics.time.start (Unix seconds)")

    scenario = ctx.obj(data, "scenario")
    sctx = ctx.at("scenario")
    load = sctx.obj(scenario, "load", required=False) or {}
    lctx = sctx.at("load")
    report.tool = lctx.text(load, "name") or "unknown"
    if report.tool == "guidellm":
        # 0.1 writes guidellm's means of instantaneous rates as plain numbers: not totals.
        report.throughput = {k: (v, True, key) for k, (v, _, key) in report.throughput.items()}
    metadata = lctx.obj(load, "metadata", required=False) or {}
    report.stage = lctx.at("metadata").integer(metadata, "stage")
    args = lctx.obj(load, "args", required=False) or {}
    if report.tool == "vllm-benchmark":
        # The harness's own arguments; only vLLM's name the load in a standard way.
        actx = lctx.at("args")
        report.concurrency = _load_number(actx, args, "max_concurrency")
        report.concurrency_key = "scenario.load.args.max_concurrency"
        report.rate = _load_number(actx, args, "request_rate")
        report.rate_key = "scenario.load.args.request_rate"
    model = sctx.obj(scenario, "model", required=False) or {}
    platform = sctx.obj(scenario, "platform", required=False) or {}
    host = sctx.obj(scenario, "host", required=False) or {}
    engine = _first_object(platform.get("engine"))
    accelerator = _first_object(host.get("accelerator"))
    name = model.get("name") if model.get("name") != "unknown" else None
    if name or engine or accelerator:
        report.extra["stack"] = [
            {
                "kind": "inference_engine",
                "tool": engine.get("name"),
                "tool_version": engine.get("version"),
                "model": name,
                "accelerator": accelerator.get("model"),
                "accelerator_count": accelerator.get("count"),
            }
        ]
    return report


def _run(ctx: Ctx, version: str, report: _Report) -> ParsedRun:
    recorder = FieldRecorder()
    fields, sources, put = recorder.fields, recorder.sources, recorder.put
    notes: list[str] = []
    rctx = Ctx(FORMAT, report.requests_key)

    total = rctx.integer(report.requests, "total", required=True)
    failures = rctx.integer(report.requests, "failures")
    incomplete = rctx.integer(report.requests, "incomplete")
    errors: int | None = failures
    if report.tool == "aiperf" and failures:
        errors = None
        failures = 0
        notes.append(
            f"the report's requests.failures ({report.requests['failures']}) is the number of "
            "kinds of error AIPerf saw, not of failed requests: errors are not known"
        )
    successful = total - (failures or 0) - (incomplete or 0)
    if successful < 0:
        raise rctx.error(
            f"failures ({failures}) and incomplete ({incomplete}) exceed total ({total})"
        )
    less = (" - failures" if failures else "") + (" - incomplete" if incomplete else "")
    put("request_count", successful, f"{report.requests_key}.total{less}")
    if errors is not None:
        sources["errors"] = f"{report.requests_key}.failures"

    for prefix, key in (("prompt", "input_length"), ("output", "output_length")):
        stat = rctx.obj(report.requests, key, required=False) or {}
        sctx = rctx.at(key)
        mean = sctx.num(stat, "mean")
        if mean == 0 and successful:
            # A request has at least one token: the converter found no lengths in the
            # harness's file (inference-perf 0.7 names them prompt_tokens) and wrote 0.
            notes.append(f"{report.requests_key}.{key}.mean is 0: the lengths are not known")
            continue
        put(f"{prefix}_tokens_mean", mean, f"{report.requests_key}.{key}.mean")
        put(f"{prefix}_tokens_std", sctx.num(stat, "stddev"), f"{report.requests_key}.{key}.stddev")

    duration = report.duration
    if duration is not None:
        put("duration_s", duration[0], duration[1])
    _throughputs(report, recorder, successful, notes)
    if duration is None and fields["qps"]:
        put("duration_s", successful / fields["qps"], "request count / request rate (derived)")

    latency_stats = _latencies(report, recorder, notes)
    _load(report, recorder, total, notes)

    measured_at = None
    if report.measured_at is not None:
        measured_at, sources["measured_at"] = report.measured_at
        if report.tool == "inference-perf":
            # llm-d stamps every stage's report with the harness's window (all stages alike).
            sources["measured_at"] += f" ({SHARED_TIME_NOTE})"
    concurrency, rate = fields["concurrency"], fields["request_rate"]
    # An unlimited rate, or unbounded concurrency with no rate: every request sent at once.
    unbounded = report.concurrency is not None and math.isinf(report.concurrency)
    rate_inf = rate is None and (
        (report.rate is not None and math.isinf(report.rate)) or (unbounded and report.rate is None)
    )
    stage = f" stage {report.stage}" if report.stage is not None else ""
    load_label = rate_label(concurrency, rate, rate_inf) or "load unknown"
    extra = {
        "report_version": version,
        "harness": report.tool,
        "stage": report.stage,
        "incomplete": incomplete,
        **report.extra,
        "latency_ms": latency_stats,
        "notes": notes,
    }
    return ParsedRun(
        format=FORMAT,
        tool_version=report.tool_version,
        label=f"llm-d report ({report.tool}{stage}) {load_label}"[:200],
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf or (rate is None and concurrency is not None),
        errors=errors,
        samples={},
        extra=present(extra),
        sources=sources,
    )


def _throughputs(report: _Report, recorder: FieldRecorder, successful: int, notes: list) -> None:
    """Totals over the duration: from the counts where the duration is known and the report's
    figure is a distribution of instantaneous rates; else the report's own figure."""
    fields, put = recorder.fields, recorder.put
    duration = report.duration[0] if report.duration else None
    given = report.throughput
    lengths = {
        "input_token_rate": fields["prompt_tokens_mean"],
        "output_token_rate": fields["output_tokens_mean"],
    }
    targets = {
        "request_rate": "qps",
        "output_token_rate": "output_tps",
        "input_token_rate": "input_tps",
    }
    for name, ours in targets.items():
        value, spread, key = given.get(name, (None, False, ""))
        per_request = 1.0 if name == "request_rate" else lengths[name]
        if duration and per_request is not None and (value is None or spread):
            what = "requests" if name == "request_rate" else f"requests x mean {name[:-5]} length"
            put(ours, successful * per_request / duration, f"{what} / {report.duration[1]}")
        elif value is not None and not spread:
            put(ours, value, key)
        elif value is not None:
            notes.append(
                f"{key} is a mean of instantaneous rates and the report has no duration: "
                f"{ours} is not known"
            )
    if fields["input_tps"] is None and "total_token_rate" in given and fields["output_tps"]:
        value, spread, key = given["total_token_rate"]
        if not spread and value >= fields["output_tps"]:
            put("input_tps", value - fields["output_tps"], f"{key} - output tokens/s (derived)")


def _latencies(report: _Report, recorder: FieldRecorder, notes: list) -> dict:
    """TTFT, TPOT and E2E percentiles in ms; every statistic kept for display."""
    lctx = Ctx(FORMAT, report.latency_key)
    tpot_key = "inter_token_latency" if report.tool in ITL_IS_TPOT else "time_per_output_token"
    columns = {"time_to_first_token": "ttft", "request_latency": "e2e", tpot_key: "tpot"}
    kept: dict[str, dict[str, float]] = {}
    for key, raw in report.latency.items():
        if not isinstance(raw, dict):
            raise lctx.at(str(key)).error("expected an object")
        stats = _statistic(lctx.at(str(key)), raw)
        if not stats:
            continue
        kept[str(key)] = stats
        metric = columns.get(str(key))
        if metric is None:
            continue
        basis = ""
        if metric == "tpot" and tpot_key == "inter_token_latency":
            basis = (
                f"; {report.tool}'s ITL is (latency - TTFT) / (output tokens - 1), PerfHub's TPOT"
            )
        scale = " (s -> ms)" if raw.get("units") in ("s", "s/token") else ""
        for label, their in PERCENTILE_KEYS.items():
            if label in stats:
                recorder.put(
                    f"{metric}_{label}_ms",
                    stats[label],
                    f"{report.latency_key}.{key}.{their}{scale}{basis}",
                )
    if "request_latency" in kept and "time_to_first_token" not in kept:
        notes.append("no TTFT or TPOT in the report: the run did not stream")
    if report.tool == "guidellm" and "time_per_output_token" in kept:
        notes.append(
            "TPOT is guidellm's inter_token_latency: the report's time_per_output_token is "
            "guidellm's latency / output tokens, the first token included"
        )
    return kept


def _statistic(ctx: Ctx, raw: dict) -> dict[str, float]:
    """A latency statistic in ms: its mean, stddev, min, max and percentiles."""
    units = raw.get("units")
    scale = None
    if isinstance(units, str):
        scale = TIME_UNITS.get(units) or TOKEN_TIME_UNITS.get(units)
    if scale is None:
        known = ", ".join((*TIME_UNITS, *TOKEN_TIME_UNITS))
        raise ctx.at("units").error(
            f"unknown unit {units!r} for a latency: expected one of {known}"
        )
    out = {}
    for name, key in (("mean", "mean"), ("stddev", "stddev"), ("min", "min"), ("max", "max")):
        value = ctx.num(raw, key)
        if value is not None:
            out[name] = value * scale
    for label, key in PERCENTILE_KEYS.items():
        value = ctx.num(raw, key)
        if value is not None:
            out[label] = value * scale
    return out


def _load(report: _Report, recorder: FieldRecorder, total: int, notes: list) -> None:
    put = recorder.put
    concurrency, rate = report.concurrency, report.rate
    finite_concurrency = concurrency is not None and not math.isinf(concurrency)
    finite_rate = rate is not None and not math.isinf(rate)
    if finite_concurrency and concurrency != int(concurrency):
        raise Ctx(FORMAT, report.concurrency_key).error(
            f"expected a whole number, got {concurrency!r}"
        )
    if finite_concurrency:
        put("concurrency", int(concurrency), report.concurrency_key)
        if finite_rate and report.tool == "inference-perf":
            # A `concurrent` stage is closed-loop: its rate is the stage's request count.
            rate = None
    elif rate is not None and math.isinf(rate) and report.tool == "vllm-benchmark" and total:
        put("concurrency", total, "requests.total (unlimited rate, no concurrency: a burst)")
    if finite_rate and rate is not None:
        put("request_rate", rate, report.rate_key)
    if concurrency is None and rate is None:
        notes.append(
            f"the report names no concurrency or rate for {report.tool}: the run joins no sweep"
        )


def _load_number(ctx: Ctx, data: dict, key: str) -> float | None:
    """A concurrency or rate: a number, or `.inf` / "inf" for unbounded."""
    value = data.get(key)
    if isinstance(value, str) and value.strip().lower() in ("inf", ".inf", "infinity"):
        return math.inf
    if isinstance(value, float) and math.isinf(value) and value > 0:
        return math.inf
    number = ctx.num(data, key)
    return number if number else None  # 0 is no load


def _stack(ctx: Ctx, scenario: dict) -> list[dict]:
    """The serving components that say what served the run: engines with model and GPUs."""
    stack = scenario.get("stack")
    if stack is None:
        return []
    if not isinstance(stack, list):
        raise ctx.at("stack").error("expected a list")
    out = []
    for item in stack:
        standardized = item.get("standardized") if isinstance(item, dict) else None
        if not isinstance(standardized, dict):
            continue
        model = standardized.get("model") if isinstance(standardized.get("model"), dict) else {}
        accelerator = standardized.get("accelerator")
        accelerator = accelerator if isinstance(accelerator, dict) else {}
        metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        out.append(
            {
                "label": metadata.get("label"),
                "kind": standardized.get("kind"),
                "tool": standardized.get("tool"),
                "tool_version": standardized.get("tool_version"),
                "role": standardized.get("role"),
                "replicas": standardized.get("replicas"),
                "model": model.get("name"),
                "accelerator": accelerator.get("model"),
                "accelerator_count": accelerator.get("count"),
            }
        )
    return out


def _first_object(items: object) -> dict:
    """The first object of a list, or {} (0.1 lists engines and accelerators)."""
    if isinstance(items, list):
        return next((item for item in items if isinstance(item, dict)), {})
    return {}


def _iso_duration(ctx: Ctx, value: object) -> float | None:
    """Seconds from an ISO 8601 duration ("PT49.97S", as pydantic writes a timedelta), or a
    number of seconds; "" is none. msgspec reads the duration (days, hours, minutes, seconds;
    not years or months, which have no fixed length)."""
    if value is None or value == "":
        return None
    dctx = ctx.at("duration")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return dctx.number(value)
    try:
        text = value.strip() if isinstance(value, str) else value
        seconds = msgspec.convert(text, timedelta).total_seconds()
    except msgspec.ValidationError as exc:
        raise dctx.error(
            f"expected an ISO 8601 duration such as 'PT49.9S', got {value!r} ({exc})"
        ) from None
    return dctx.number(seconds)


def _timestamp(ctx: Ctx, value: object) -> datetime | None:
    """An ISO 8601 time ("2025-11-05T18:00:42Z"; without a zone, UTC) or Unix seconds."""
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return epoch_to_datetime(ctx, ctx.number(value))
    if not isinstance(value, str):
        raise ctx.error(f"expected an ISO 8601 time, got {value!r}")
    try:
        when = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ctx.error(f"expected an ISO 8601 time, got {value!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


# llm-d-benchmark names each report after the harness file it was converted from.
_REPORT_NAME = re.compile(r"^benchmark_report(?P<v02>_v0\.2)?,_(?P<source>.+)\.yaml$")


def arrange_folder(files: Files) -> Files:
    """An llm-d results folder holds each harness file with its two reports (0.1 and 0.2):
    the harness file is read where it is there (it has more: per-request samples, the tool's
    own notes), else the 0.2 report, else the 0.1 one. A report of the harness's summary of all
    stages goes where the stages' reports are beside it, as the summary itself does."""
    names = {name for _, name in files}
    kept = []
    for content, name in files:
        match = _REPORT_NAME.match(posixpath.basename(name))
        if match is None:
            kept.append((content, name))
            continue
        folder, source = posixpath.dirname(name), match["source"]
        beside = {n for n in names if posixpath.dirname(n) == folder}
        # A file of several benchmarks (guidellm's) gives one report each: `<file>_<index>`.
        sources = {source, re.sub(r"_\d+$", "", source)}
        if any(posixpath.join(folder, s) in beside for s in sources):
            continue
        newer = posixpath.join(folder, f"benchmark_report_v0.2,_{source}.yaml")
        if match["v02"] is None and newer in beside:
            continue
        if fnmatchcase(source, "summary_lifecycle_metrics.json") and any(
            fnmatchcase(
                posixpath.basename(n), "benchmark_report*,_stage_*_lifecycle_metrics.json.yaml"
            )
            for n in beside
        ):
            continue
        kept.append((content, name))
    return kept


register(
    LoadTestFormat(
        name=FORMAT,
        priority=48,
        label="llm-d benchmark report",
        parse=parse,
        looks_like=looks_like,
        required=("version", "scenario"),
        signature=("version", "scenario", "results", "run"),
        filename_hints=("benchmark_report",),
        # Multi-turn session statistics, no request results.
        side_files=("benchmark_report*session_lifecycle_metrics*",),
        arrange_folder=arrange_folder,
    )
)
