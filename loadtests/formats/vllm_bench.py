"""`vllm bench serve --save-result` (one JSON object) and `--append-result` (JSON lines).

Keys as vLLM writes them (benchmarks/benchmark_serving.py, vllm/benchmarks/serve.py):
`p{P}_{metric}_ms` for each `--metric-percentiles` value (99.9 -> "p99.9_ttft_ms"), `e2el` for
end-to-end latency, `request_rate` as the string "inf", per-request `ttfts` and `itls` in seconds,
`errors` as one string per request ("" when it succeeded). Older versions wrote
`request_goodput:` (with the colon), no `max_concurrency` and no `failed`; 0.4.0 wrote
`request_inthroughput` and `input_throughput`. `vllm bench sweep` writes a JSON list of runs.

SGLang's `bench_serving` (`python -m sglang.bench_serving`, later `sglang.benchmark.serving`)
began as a copy of vLLM's script and writes the same layout, one JSON line per run
(`--output-file`), with its own spellings: end-to-end latency as `*_e2e_latency_ms`, its
dataset arguments beside the results (`dataset_name`, `random_output_len`, ...), `concurrency`
as the mean number of requests in flight it measured, and no `date`.

`vllm bench sweep serve` adds, after the tool's own keys, `run_number` and then the parameters
it set for that combination: the server's (`max_num_seqs`) and the benchmark's
(`max_concurrency`). Those after `run_number`, less the load it swept, are the run's
`overrides`: the configuration a sweep of this tool is grouped by (`loadtests.configuration`).
The full key-by-key mapping is docs/loadtest-formats.md.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime

import numpy as np

from analysis.percentiles import QUANTILE_OF, minimum_count, tool_percentile

from .base import (
    Ctx,
    Document,
    FieldRecorder,
    ParsedRun,
    arrival,
    first_of,
    mark_failed,
    mean_std,
    missing_keys,
    rate_label,
)
from .folders import Files, drop_beside
from .registry import LoadTestFormat, register

FORMAT = "vllm-bench"
REQUIRED = ("completed", "duration")

# Our metric -> the spellings of its keys (vLLM's first, then SGLang's). ITL is kept for
# display; TPOT fills the tpot columns.
METRICS = {"ttft": ("ttft",), "tpot": ("tpot",), "e2e": ("e2el", "e2e_latency"), "itl": ("itl",)}
# Keys only SGLang's bench_serving writes: which tool wrote the file.
SGLANG_KEYS = ("total_output_tokens_retokenized", "mean_e2e_latency_ms", "median_e2e_latency_ms")
# Our percentile label -> the spelling vLLM uses in keys.
PERCENTILE_KEYS = {"p50": "p50", "p90": "p90", "p95": "p95", "p99": "p99", "p999": "p99.9"}
# 0.4.0 misspelt the request rate; later versions fixed it.
REQUEST_RATE_KEYS = ("request_throughput", "request_inthroughput")
# `vllm bench sweep`'s parameters that set the load or the run's name, not the configuration
# (spelt with "_" or "-": its parameter files accept both).
SWEEP_LOAD_KEYS = frozenset({"max_concurrency", "request_rate", "num_prompts", "_benchmark_name"})
# Keys vLLM and SGLang write themselves: never a configuration, wherever a file puts them.
TOOL_KEYS = frozenset(
    """date endpoint_type backend label model_id tokenizer_id best_of use_beam_search
    num_prompts request_rate burstiness max_concurrency duration completed failed errors
    request_throughput request_inthroughput request_goodput request_goodput: output_throughput
    input_throughput input_sequence_throughput max_output_tokens_per_s max_concurrent_requests
    rtfx input_lens output_lens ttfts itls latencies generated_texts start_times queue_times
    version vllm_version run_number tag concurrency accept_length server_info dataset_name
    sharegpt_output_len random_input_len random_output_len random_range_ratio
    rps_change_events server_queue_times server_ttfts""".split()  # noqa: SIM905 (a list of words reads better as words)
)
# How much of a run's parameters its label names (the rest is on the run's page).
LABEL_PARAMETERS = 60
TOOL_PREFIXES = ("total_", "spec_decode_", "diffusion_", "ramp_up_", "acceptance_")
TOOL_METRIC = re.compile(r"^(mean|median|std|p\d+(\.\d+)?)_\w+_ms$")
# Bounds on what a file may record as overrides or metadata: a sweep sets a handful.
MAX_OVERRIDES = 64
MAX_OVERRIDE_CHARS = 500


def looks_like(data: dict) -> bool:
    return "completed" in data and (
        first_of(data, REQUEST_RATE_KEYS) is not None
        or any(key.endswith("_ttft_ms") for key in data)
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    runs = []
    for document in documents:
        ctx = document.ctx(FORMAT)
        if not isinstance(document.data, dict):
            raise ctx.error("expected a JSON object")
        runs.append(mark_failed(_parse_run(ctx, document.data)))
    return runs


def written_by_sglang(data: dict) -> bool:
    """Whether the run was written by SGLang's bench_serving rather than vLLM's."""
    return any(key in data for key in SGLANG_KEYS)


def _parse_run(ctx: Ctx, data: dict) -> ParsedRun:
    missing = [key for key in REQUIRED if data.get(key) is None]
    if missing:
        raise ctx.error(missing_keys(missing))
    sglang = written_by_sglang(data)

    recorder = FieldRecorder()
    fields, sources, put = recorder.fields, recorder.sources, recorder.put

    concurrency = ctx.integer(data, "max_concurrency")
    rate, rate_inf = _request_rate(ctx, data)
    ramp = _ramp_up(ctx, data)
    if ramp is not None:
        # `--ramp-up-strategy`: the rate moved from its start to its end over the run, and
        # vLLM still writes `request_rate: "inf"`. No one load was offered, so the run names
        # none (it is no point of a sweep, and no burst).
        concurrency, rate, rate_inf = None, None, False
    put("concurrency", concurrency, "max_concurrency")
    put("request_rate", rate, "request_rate (req/s)")
    prompts = ctx.integer(data, "num_prompts")
    if concurrency is None and rate_inf and prompts:
        # No rate and no cap: the script sends every request at once, so all of them are in
        # flight at the start, the most the client ever holds (a burst that drains from there).
        put("concurrency", prompts, "num_prompts (unlimited rate, no max_concurrency: a burst)")

    completed = ctx.integer(data, "completed", required=True)
    duration = ctx.num(data, "duration", required=True)
    put("request_count", completed, "completed")
    put("duration_s", duration, "duration (s)")
    _throughputs(ctx, data, completed, duration, put)

    succeeded = _success_mask(ctx, data)
    input_lens = _per_request(ctx, data, "input_lens", succeeded)
    output_lens = _per_request(ctx, data, "output_lens", succeeded)
    total_input = ctx.integer(data, "total_input_tokens")
    total_output = ctx.integer(data, "total_output_tokens")
    for prefix, lens, total, lens_key, total_key in (
        ("prompt", input_lens, total_input, "input_lens", "total_input_tokens"),
        ("output", output_lens, total_output, "output_lens", "total_output_tokens"),
    ):
        mean, std = _length_stats(lens, total, completed)
        how = f"mean of {lens_key}" if lens else f"{total_key} / completed"
        put(f"{prefix}_tokens_mean", mean, how)
        put(f"{prefix}_tokens_std", std, f"population std of {lens_key}")

    stats = {}
    for name, spellings in METRICS.items():
        spelling = _spelling(data, spellings)
        percentiles = {}
        for ours, theirs in PERCENTILE_KEYS.items():
            key = f"{theirs}_{spelling}_ms"
            value = ctx.num(data, key)
            if value is None and ours == "p50":
                # The default run writes median_* always and p50_* only when asked for.
                key = f"median_{spelling}_ms"
                value = ctx.num(data, key)
            percentiles[ours] = value
            if name != "itl":
                put(f"{name}_{ours}_ms", value, key)
        summary = {
            "mean": ctx.num(data, f"mean_{spelling}_ms"),
            "median": ctx.num(data, f"median_{spelling}_ms"),
            "std": ctx.num(data, f"std_{spelling}_ms"),
            **(percentiles if name == "itl" else {}),
        }
        if any(value is not None for value in summary.values()):
            stats[name] = summary

    samples = _samples(ctx, data, succeeded, output_lens)
    _percentiles_from_samples(fields, samples, put, e2e_measured=bool(data.get("latencies")))
    queued, queue_computed = _client_queue(ctx, data, succeeded, rate)
    stats.update(queued)
    stats.update(_server_phases(ctx, data, succeeded))
    measured_at = _date(ctx, data)
    if measured_at is not None:
        sources["measured_at"] = "date (local time of the client, read as UTC)"
    file_label = ctx.text(data, "label")
    tool = "sglang bench" if sglang else "vllm bench"
    label = f"{tool} {rate_label(concurrency, rate, rate_inf)}".strip()
    if ramp is not None:
        strategy, start, end, cap = ramp
        label = f"{label} ramp-up {strategy} {start:g} to {end:g} req/s" + (
            f" (c<={cap})" if cap else ""
        )
    if file_label:
        label = f"{label} ({file_label})"
    overrides, metadata = _sweep_overrides(ctx, data), _metadata(ctx, data, sglang)
    if parameters := {**overrides, **metadata}:
        # Runs of one `vllm bench sweep` differ in these only: say which is which.
        named = ", ".join(f"{key}={value}" for key, value in parameters.items())
        if len(named) > LABEL_PARAMETERS:
            named = named[: LABEL_PARAMETERS - 1] + "…"
        label = f"{label} [{named}]"

    goodput_key = "request_goodput" if "request_goodput" in data else "request_goodput:"
    errors, errors_source = _errors(ctx, data, succeeded, completed)
    if errors_source:
        sources["errors"] = errors_source
    version = ctx.text(data, "vllm_version") or ctx.text(data, "version")
    extra = {
        "tool": "sglang.bench_serving" if sglang else None,
        # SGLang's `concurrency`: requests in flight on average (sum of latencies / duration).
        "achieved_concurrency": ctx.num(data, "concurrency") if sglang else None,
        "dataset_name": ctx.text(data, "dataset_name"),
        "model_id": ctx.text(data, "model_id"),
        "tokenizer_id": ctx.text(data, "tokenizer_id"),
        "backend": ctx.text(data, "backend"),
        "endpoint_type": ctx.text(data, "endpoint_type"),
        "label": file_label,
        "num_prompts": ctx.integer(data, "num_prompts"),
        "burstiness": ctx.num(data, "burstiness"),
        # `--burstiness` shapes the gaps of a finite rate only (gamma; 1 is Poisson).
        "arrival": None if rate is None else arrival("gamma", ctx.num(data, "burstiness")),
        "ramp_up": None
        if ramp is None
        else dict(zip(("strategy", "start_rps", "end_rps", "max_concurrency"), ramp, strict=True)),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "total_token_throughput": ctx.num(data, "total_token_throughput"),
        # vLLM's own rates, validated and kept beside the ones computed from the totals.
        "file_rates": {
            key: ctx.num(data, key)
            for key in (*REQUEST_RATE_KEYS, "output_throughput", "input_throughput")
            if data.get(key) is not None
        },
        "max_output_tokens_per_s": ctx.num(data, "max_output_tokens_per_s"),
        "max_concurrent_requests": ctx.integer(data, "max_concurrent_requests"),
        "overrides": overrides,
        "metadata": metadata,
        "goodput_rps": ctx.num(data, goodput_key),
        "latency_ms": stats,
        # Where `latency_ms`'s client queue figures came from: keys, or computed from arrays.
        "client_queue_from": ("queue_times and latencies" if queue_computed else "keys")
        if queued
        else None,
        "notes": _client_queue_notes(
            queued, queue_computed, fields, ctx.integer(data, "max_concurrency"), rate
        )
        + _server_phases_notes(stats, fields),
        "date_timezone": "UTC (assumed: the tool writes local time without a zone)"
        if measured_at
        else None,
    }
    return ParsedRun(
        format=FORMAT,
        tool_version=None if version in (None, "N/A") else version,
        label=label,
        measured_at=measured_at,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=errors,
        samples=samples,
        extra={key: value for key, value in extra.items() if value not in (None, {}, [])},
        sources=sources,
    )


def _sweep_overrides(ctx: Ctx, data: dict) -> dict[str, str | int | float | bool]:
    """The parameters `vllm bench sweep` set for this run beyond the load it swept: the keys
    after `run_number`, which it writes last (the parsed object keeps the file's key order)."""
    keys = list(data)
    if "run_number" not in data:
        return {}
    return _parameters(ctx, data, keys[keys.index("run_number") + 1 :], "sweep parameters")


def _metadata(ctx: Ctx, data: dict, sglang: bool) -> dict[str, str | int | float | bool]:
    """`--metadata KEY=VALUE` pairs (`tp=1`): vLLM writes them between `num_prompts` and
    `request_rate` (SGLang has no such option)."""
    keys = list(data)
    if sglang or "num_prompts" not in data or "request_rate" not in data:
        return {}
    return _parameters(
        ctx, data, keys[keys.index("num_prompts") + 1 : keys.index("request_rate")], "metadata"
    )


def _parameters(
    ctx: Ctx, data: dict, keys: list[str], what: str
) -> dict[str, str | int | float | bool]:
    """The configuration `keys` record, less vLLM's own keys (a file re-written with sorted
    keys puts them anywhere) and the load. Values are kept as written; an object or a list (a
    nested server option) as its JSON."""
    found: dict[str, str | int | float | bool] = {}
    for key in keys:
        if key.replace("-", "_") in SWEEP_LOAD_KEYS or _written_by_the_tool(key):
            continue
        value = data[key]
        if value is None:
            continue  # a parameter left unset
        if isinstance(value, dict | list):
            value = json.dumps(value, sort_keys=True, separators=(",", ":"))
        elif isinstance(value, float) and not math.isfinite(value):
            raise ctx.at(key).error(f"expected a finite number, got {value!r}")
        if len(key) > MAX_OVERRIDE_CHARS or len(str(value)) > MAX_OVERRIDE_CHARS:
            raise ctx.at(key).error(f"{what}: longer than {MAX_OVERRIDE_CHARS} characters")
        found[key] = value
        if len(found) > MAX_OVERRIDES:
            raise ctx.at(key).error(f"more than {MAX_OVERRIDES} {what}")
    return found


def _written_by_the_tool(key: str) -> bool:
    """Whether vLLM or SGLang writes `key` itself (a result, not a configuration)."""
    return key in TOOL_KEYS or key.startswith(TOOL_PREFIXES) or bool(TOOL_METRIC.match(key))


def _spelling(data: dict, spellings: tuple[str, ...]) -> str:
    """The spelling of a metric the file uses (the first one when it has none of them)."""
    for spelling in spellings:
        if any(key.endswith(f"_{spelling}_ms") for key in data):
            return spelling
    return spellings[0]


def _throughputs(ctx: Ctx, data: dict, completed: int, duration: float, put) -> None:
    """Rates from the totals over the benchmark's duration, which is how vLLM computes them too;
    the file's own rate keys only stand in when a total is missing."""
    total_input = ctx.num(data, "total_input_tokens")
    total_output = ctx.num(data, "total_output_tokens")
    if not duration:
        return
    put("qps", completed / duration, "completed / duration")
    if total_output is not None:
        put("output_tps", total_output / duration, "total_output_tokens / duration")
    else:
        put("output_tps", ctx.num(data, "output_throughput"), "output_throughput")
    if total_input is not None:
        put("input_tps", total_input / duration, "total_input_tokens / duration")
    elif ctx.num(data, "input_throughput") is not None:
        put("input_tps", ctx.num(data, "input_throughput"), "input_throughput")
    else:
        total = ctx.num(data, "total_token_throughput")
        output = ctx.num(data, "output_throughput")
        if total is not None and output is not None:
            put(
                "input_tps",
                max(total - output, 0.0),
                "total_token_throughput - output_throughput",
            )


def _ramp_up(ctx: Ctx, data: dict) -> tuple[str, float, float, int | None] | None:
    """(strategy, start and end rate, max_concurrency) of a `--ramp-up-strategy` run, else None."""
    strategy = ctx.text(data, "ramp_up_strategy")
    if not strategy:
        return None
    start = ctx.num(data, "ramp_up_start_rps", required=True)
    end = ctx.num(data, "ramp_up_end_rps", required=True)
    return strategy, start, end, ctx.integer(data, "max_concurrency")


def _request_rate(ctx: Ctx, data: dict) -> tuple[float | None, bool]:
    value = data.get("request_rate")
    if isinstance(value, str) and value.strip().lower() in ("inf", "infinity"):
        return None, True
    if isinstance(value, float) and math.isinf(value):  # JSON `Infinity`
        return None, True
    return ctx.num(data, "request_rate"), False


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
    kept_gaps = keep(per_request_itls) if len(per_request_itls) == len(ttfts) else None
    # A TTFT of exactly 0 with no token gap is a request the client never timed (SGLang's
    # client saw no content chunk, yet counts it a success): no sample, as it gets no E2E.
    ttft_ms = [
        t * 1000
        for i, t in enumerate(keep(ttfts))
        if t is not None and not (t == 0 and kept_gaps is not None and not kept_gaps[i])
    ]
    if ttft_ms:
        samples["ttft"] = ttft_ms
    kept_itls = [[gap for gap in gaps if gap is not None] for gaps in keep(per_request_itls)]
    kept_itls = _without_ttft_in_itls(keep(ttfts), kept_itls)
    itl_ms = [gap * 1000 for gaps in kept_itls for gap in gaps]
    if itl_ms:
        samples["itl"] = itl_ms
    # vLLM's latency is ttft + sum(itl), and its TPOT is (latency - ttft) / (output_len - 1):
    # with both arrays per request, e2e and TPOT samples follow exactly.
    kept_ttfts = keep(ttfts)
    # Per-request end-to-end latency as the client measured it (vLLM 0.2x writes `latencies`
    # in the default file, successful requests only; some forks write one per request).
    latencies = [v for v in keep(ctx.at("latencies").numbers(
        ctx.array(data, "latencies", required=False) or []
    )) if v is not None and v > 0]  # fmt: skip
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
    if latencies:  # measured beats reconstructed
        samples["e2e"] = [v * 1000 for v in latencies]
    return samples


def _percentiles_from_samples(
    fields: dict, samples: dict[str, list[float]], put, *, e2e_measured: bool
) -> None:
    """The percentiles of a latency the summary leaves out, from its per-request values, as vLLM
    takes its own (`exact_percentile`), each only with enough requests (the one minimum-count
    rule). A metric without any key in the file (the default run writes no `e2el` keys) is
    filled whole; one with some keys (`--metric-percentiles 50,99`) only where the values give
    back every figure the file does write for it: then they are the requests vLLM summed over,
    and the filled figures are the ones it would have written. Where they differ (SGLang counts
    requests its client never timed, which the samples leave out) the missing ones stay
    missing. Each filled figure's source says it was computed, and from how many requests."""
    for name in ("e2e", "ttft", "tpot"):
        values = samples.get(name)
        if not values:
            continue
        keys = {ours: f"{name}_{ours}_ms" for ours in PERCENTILE_KEYS}
        written = {ours: fields[key] for ours, key in keys.items() if fields.get(key) is not None}
        if not all(_same_figure(exact_percentile(values, ours), v) for ours, v in written.items()):
            continue
        if len(written) == len(keys):
            continue
        arrays = SAMPLE_ARRAYS["latencies" if name == "e2e" and e2e_measured else name]
        checked = f"; gives back the file's {', '.join(written)}" if written else ""
        for ours, key in keys.items():
            if ours not in written and len(values) >= minimum_count(QUANTILE_OF[ours]):
                put(
                    key,
                    exact_percentile(values, ours),
                    f"computed: {ours} of {len(values)} per-request {arrays} (numpy linear, as "
                    f"vLLM){checked}",
                )


# The per-request arrays each family of samples comes from.
SAMPLE_ARRAYS = {
    "latencies": "latencies",
    "e2e": "ttfts + itls",
    "ttft": "ttfts",
    "tpot": "itls / (output_lens - 1)",
}


def exact_percentile(values: list[float], label: str) -> float:
    """The percentile `label` ("p99") of `values` as vLLM computes the ones it writes: over the
    same requests, the figure vLLM would have written."""
    return tool_percentile(values, QUANTILE_OF[label])


def _same_figure(computed: float, written: float) -> bool:
    """Whether a percentile computed here is the one the file wrote (the same numpy call on the
    same seconds, times 1000: they differ only in the last bits of a float)."""
    return math.isclose(computed, written, rel_tol=1e-9, abs_tol=1e-9)


# vLLM 0.33+'s per-request engine timings (`--save-detailed`, against a server started with
# `--enable-per-request-metrics`): our name -> its array (s, one per request, null where the
# server sent none). vLLM's client reads them from the `metrics` object the server puts on a
# stream's final usage chunk (benchmarks/lib/endpoint_request_func.py `_update_server_metrics`):
# `queue_time_ms` is scheduled - queued, `time_to_first_token_ms` first token - scheduled
# (entrypoints/generate/base/serving.py `build_per_request_timing_metrics`), the per-request
# values of vllm:request_queue_time_seconds and vllm:request_prefill_time_seconds. So
# `server_ttfts` is no TTFT: it leaves out the queue, the HTTP server and the tokenizer.
SERVER_PHASES = {"server_queue": "server_queue_times", "server_prefill": "server_ttfts"}


def _server_phases(
    ctx: Ctx, data: dict, succeeded: list[bool] | None
) -> dict[str, dict[str, float]]:
    """The engine's queue and prefill of the successful requests, in ms, for
    `extra.latency_ms`: mean, median, std and the percentiles with enough requests."""
    found = {}
    for ours, key in SERVER_PHASES.items():
        values = [v * 1000 for v in _per_request(ctx, data, key, succeeded) or []]
        if not values:
            continue
        found[ours] = _summary(values)
    return found


def _summary(values: list[float]) -> dict[str, float]:
    """Per-request values (ms) summarised as vLLM's own figures are: mean, median, std, and
    the percentiles with enough requests to be measurements."""
    summary = {
        "mean": float(np.mean(values)),
        "median": float(np.median(values)),
        "std": float(np.std(values)),
    }
    for label in PERCENTILE_KEYS:
        if len(values) >= minimum_count(QUANTILE_OF[label]):
            summary[label] = exact_percentile(values, label)
    return summary


def _server_phases_notes(stats: dict[str, dict[str, float]], fields: dict) -> list[str]:
    """Where a run's first tokens spent their time, when the file has the engine's timings.
    Medians side by side, never subtracted: the median of a difference is not the difference
    of the medians."""
    prefill, queue = stats.get("server_prefill"), stats.get("server_queue")
    if not prefill or not queue:
        return []
    ttft = fields.get("ttft_p50_ms")
    beside = "" if ttft is None else f", beside the client's TTFT median of {ttft:,.1f} ms"
    return [
        f"The engine timed each request itself (vLLM's --enable-per-request-metrics): its "
        f"queue median {queue['median']:,.1f} ms and its prefill (scheduled to first token) "
        f"median {prefill['median']:,.1f} ms{beside}. The engine's clock starts after the HTTP "
        f"server and the tokenizer, and stops before the detokenizer and the network."
    ]


# vLLM 0.32's client-side queue (`--percentile-metrics client_queue_time,
# e2el_including_client_queue`): our name -> its metric's spelling in keys.
CLIENT_QUEUE = {
    "client_queue": "client_queue_time",
    "e2e_including_client_queue": "e2el_including_client_queue",
}


def _client_queue(
    ctx: Ctx, data: dict, succeeded: list[bool] | None, rate: float | None
) -> tuple[dict[str, dict[str, float]], bool]:
    """vLLM 0.32's client-side queue, in ms, for `extra.latency_ms`: with `--max-concurrency`,
    each request waits in the client for a free slot from the time the rate scheduled it
    (`queue_times`, s), and is timed (TTFT, E2EL) only once sent. `e2el_including_client_queue`
    adds the wait: what a user arriving at the rate would have waited. Read from the file's
    keys; else, at a finite rate with a cap (where vLLM computes them), from `queue_times` and
    `latencies` of the successful requests, as vLLM does. At an unlimited rate every request
    is "scheduled" at the start, so the wait is the burst's backlog, not a latency: not
    computed. Returns the summaries and whether they were computed."""
    found = {}
    for ours, theirs in CLIENT_QUEUE.items():
        summary = {
            label: ctx.num(data, f"{label}_{theirs}_ms") for label in ("mean", "median", "std")
        }
        for label, spelling in PERCENTILE_KEYS.items():
            summary[label] = ctx.num(data, f"{spelling}_{theirs}_ms")
        summary = {label: value for label, value in summary.items() if value is not None}
        if summary:
            found[ours] = summary
    if found or rate is None or ctx.integer(data, "max_concurrency") is None:
        return found, False
    queue = ctx.at("queue_times").numbers(ctx.array(data, "queue_times", required=False) or [])
    latencies = ctx.at("latencies").numbers(ctx.array(data, "latencies", required=False) or [])
    if not queue or len(queue) != len(latencies):
        return found, False
    # Successful requests: by `errors` where the file has it, else by a latency (failed: 0).
    ok = succeeded if succeeded and len(succeeded) == len(queue) else [v > 0 for v in latencies]
    pairs = [(q, e) for q, e, good in zip(queue, latencies, ok, strict=True) if good]
    pairs = [(q, e) for q, e in pairs if q is not None and e is not None]
    if not pairs:
        return found, False
    for ours, values in (
        ("client_queue", [q * 1000 for q, _ in pairs]),
        ("e2e_including_client_queue", [(q + e) * 1000 for q, e in pairs]),
    ):
        found[ours] = _summary(values)
    return found, True


def _client_queue_notes(
    queued: dict[str, dict[str, float]],
    computed: bool,
    fields: dict,
    cap: int | None,
    rate: float | None,
) -> list[str]:
    """What a run whose client held requests back says about its end-to-end figures."""
    including = queued.get("e2e_including_client_queue")
    if not including or rate is None or cap is None:
        return []
    wait = queued.get("client_queue", {})

    def ms(summary: dict, label: str) -> str:
        value = summary.get(label)
        return "—" if value is None else f"{value:,.0f} ms"

    tail = "p99" if "p99" in including else "median"
    how = (
        "computed from its queue_times and latencies as vLLM does"
        if computed
        else "read from the file"
    )
    return [
        f"The client held requests back: with --max-concurrency {cap} at {rate:g} req/s each "
        f"request waited for a free slot before it was sent (client queue median "
        f"{ms(wait, 'median')}, {tail} {ms(wait, tail)}). E2E and TTFT here are from sending, as "
        f"every tool's (E2E {tail} {ms({tail: fields.get(f'e2e_{tail}_ms')}, tail)}); with the "
        f"wait, as a user arriving at {rate:g} req/s would have waited, E2E {tail} is "
        f"{ms(including, tail)} (vLLM's e2el_including_client_queue, {how})."
    ]


def _without_ttft_in_itls(ttfts: list, itls: list[list[float]]) -> list[list[float]]:
    """Some 2024 releases' OpenAI-completions client appended the time to the first token to
    `itls` as well (vllm-project/vllm#7242): each request's first gap then equals its TTFT.
    When that holds for nearly every request, the first gap is that duplicate and is dropped, so
    e2e (ttft + sum of gaps) and TPOT samples do not count the prefill twice."""
    pairs = [
        (ttft, gaps[0])
        for ttft, gaps in zip(ttfts, itls, strict=False)
        if ttft and gaps and len(gaps) > 1
    ]
    if len(pairs) < 3:
        return itls
    duplicated = sum(1 for ttft, first in pairs if abs(first - ttft) <= 0.01 * ttft + 1e-4)
    if duplicated < 0.9 * len(pairs):
        return itls
    return [gaps[1:] if gaps else gaps for gaps in itls]


def _errors(
    ctx: Ctx, data: dict, succeeded: list[bool] | None, completed: int | None
) -> tuple[int | None, str | None]:
    failed = ctx.integer(data, "failed")
    if failed is not None:
        return failed, "failed"
    if succeeded is not None:
        return succeeded.count(False), "non-empty entries of errors"
    prompts = ctx.integer(data, "num_prompts")
    if prompts is not None and completed is not None:
        return max(prompts - completed, 0), "num_prompts - completed"
    return None, None


def _date(ctx: Ctx, data: dict) -> datetime | None:
    value = data.get("date")
    if value is None:
        return None
    text = str(value)
    for parse in (
        lambda t: datetime.strptime(t, "%Y%m%d-%H%M%S"),
        lambda t: datetime.fromisoformat(t.replace("Z", "+00:00")),
    ):
        try:
            parsed = parse(text)
            return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)
        except (ValueError, OverflowError):
            continue
    raise ctx.at("date").error(f"expected YYYYMMDD-HHMMSS, got {value!r}")


def arrange_folder(files: Files) -> Files:
    """`vllm bench sweep` writes each repeat of a parameter combination as `run=<N>.json` and
    all of them again as the folder's `summary.json`: where the runs are beside it, the summary
    is dropped, or every repeat would be imported twice."""
    return drop_beside(files, drop=("summary.json",), beside="run=*.json")


register(
    LoadTestFormat(
        name=FORMAT,
        priority=10,
        label="vLLM benchmark_serving.py / vllm bench serve / SGLang bench_serving",
        parse=parse,
        looks_like=looks_like,
        required=REQUIRED,
        signature=(
            "completed",
            "duration",
            "request_throughput",
            "request_inthroughput",
            "total_input_tokens",
            "total_output_tokens",
            "output_throughput",
            "mean_ttft_ms",
            "median_ttft_ms",
            "p99_ttft_ms",
            "mean_tpot_ms",
            "median_tpot_ms",
            "num_prompts",
            "request_rate",
            "model_id",
            "tokenizer_id",
            "backend",
            "date",
        ),
        filename_hints=("vllm", ".jsonl"),
        arrange_folder=arrange_folder,
    )
)
