"""What the lint reads from a file beyond MeasuredRun's columns, per format.

An extractor takes the file's decoded documents and its parsed runs and returns one `RunView`
per run. A format without an extractor still gets every check that needs only the run's fields.
Files are already validated by their parser, so an extractor reads defensively and never
raises: a value of the wrong type is simply not used.

    register_reader("vllm-bench", read_vllm)
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from analysis.fingerprint import LENGTH_QUANTILES, Lengths
from loadtests.formats import Document, ParsedRun, genai_perf_requests
from loadtests.formats.base import Ctx, mean_std
from loadtests.formats.vllm_bench import written_by_sglang

from .base import RunView, Timing

Reader = Callable[[list[Document], list[ParsedRun]], list[RunView]]
_READERS: dict[str, Reader] = {}


def register_reader(fmt: str, reader: Reader) -> None:
    _READERS[fmt] = reader


def views(documents: list[Document], runs: list[ParsedRun]) -> list[RunView]:
    """One RunView per run; the format's reader when there is one, else the fields alone."""
    if not runs:
        return []
    reader = _READERS.get(runs[0].format)
    if reader is not None:
        try:
            found = reader(documents, runs)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError):
            found = None  # an unusual layout: lint what the fields say
        if found is not None and len(found) == len(runs):
            return found
    return [RunView(run=run, index=i) for i, run in enumerate(runs)]


# --- small readers --------------------------------------------------------------------------


def num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, int | float) and math.isfinite(value):
        return float(value)
    return None


def flag(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0"):
        return value.strip().lower() in ("true", "1")
    return None


def numbers(values: Any) -> list[float]:
    if not isinstance(values, list):
        return []
    return [v for v in (num(x) for x in values) if v is not None]


def summary_lengths(
    summary: dict, count: float | None = None, basis: str = "reported quantiles"
) -> Lengths | None:
    """Lengths from a tool's summary object ({p25.., mean/avg, std/std_dev/stddev})."""
    if not summary:
        return None
    quantiles = {name: num(summary.get(name)) for name in LENGTH_QUANTILES}
    if quantiles["p50"] is None:
        quantiles["p50"] = num(summary.get("median"))
    quantiles = {k: v for k, v in quantiles.items() if v is not None}
    mean = next(
        (num(summary.get(k)) for k in ("mean", "avg") if num(summary.get(k)) is not None), None
    )
    std = next(
        (
            num(summary.get(k))
            for k in ("std", "std_dev", "stddev")
            if num(summary.get(k)) is not None
        ),
        None,
    )
    if not quantiles and mean is None:
        return None
    return Lengths(
        quantiles=quantiles,
        mean=mean,
        std=std,
        basis=basis,
        count=None if count is None else int(count),
    )


REALISTIC = (
    "sharegpt",
    "burstgpt",
    "hf",
    "custom",
    "file",
    "jsonl",
    "json",
    "csv",
    "arxiv",
    "aime",
    "lmsys",
    "dataset",
    "conversations",
)
SYNTHETIC = ("random", "synthetic", "prompt_tokens=", "output_tokens=", "fixed", "constant")


def realistic(dataset: str | None) -> bool | None:
    """True for real prompts (ShareGPT, a file), False for generated ones, None when unknown."""
    if not dataset:
        return None
    text = dataset.lower()
    if any(word in text for word in SYNTHETIC):
        return False
    if any(word in text for word in REALISTIC) or "/" in text:
        return True
    return None


# --- vLLM bench -----------------------------------------------------------------------------


def read_vllm(documents: list[Document], runs: list[ParsedRun]) -> list[RunView]:
    out = []
    for index, (document, run) in enumerate(zip(documents, runs, strict=True)):
        d = document.data if isinstance(document.data, dict) else {}
        errors = d.get("errors") if isinstance(d.get("errors"), list) else None
        ok = [not e for e in errors] if errors else None

        def kept(key: str, ok=ok, d=d) -> list:
            values = d.get(key) if isinstance(d.get(key), list) else []
            if ok is not None and len(ok) == len(values):
                values = [v for v, good in zip(values, ok, strict=True) if good]
            return values

        output_lens = numbers(kept("output_lens"))
        prompt_lens = numbers(kept("input_lens"))
        ttfts = [t * 1000 for t in numbers(kept("ttfts"))]
        dataset = _first_text(d, ("dataset_name", "dataset", "dataset_path"))
        requested, requested_std = requested_output(d)
        view = RunView(
            run=run,
            index=index,
            prompt=Lengths.from_values(prompt_lens) if prompt_lens else None,
            output=Lengths.from_values(output_lens) if output_lens else None,
            output_min=min(output_lens) if output_lens else None,
            output_max=max(output_lens) if output_lens else None,
            # vLLM gathers results in the order it sent the requests: array order is start order.
            ttft_in_start_order_ms=ttfts or None,
            e2e_mean_ms=_first_num(d, ("mean_e2el_ms", "mean_e2e_latency_ms")),  # vLLM, SGLang
            requested_output_tokens=requested,
            requested_output_std=requested_std,
            ignore_eos=flag(d.get("ignore_eos")),
            dataset=dataset,
            dataset_realistic=realistic(dataset),
            streaming=None,
            reported_rate=num(d.get("request_throughput")) or num(d.get("request_inthroughput")),
            reported_rate_key="request_throughput",
            # SGLang's own mean number in flight, as the parser kept it.
            observed_concurrency=run.extra.get("achieved_concurrency"),
        )
        out.append(view)
    return out


# The output-length argument each dataset of vLLM's and SGLang's bench scripts reads; the
# others are argparse defaults SGLang writes beside the results whatever the dataset.
OUTPUT_LEN_OF_DATASET = {"random": "random_output_len", "sharegpt": "sharegpt_output_len",
                         "sonnet": "sonnet_output_len"}  # fmt: skip
GENERIC_OUTPUT_LEN_KEYS = ("output_len", "output_tokens")


def requested_output(d: dict) -> tuple[float | None, float | None]:
    """(mean, standard deviation) of the output lengths a vLLM or SGLang bench run asked for,
    from the arguments written beside its results; (None, None) when it asked for none (a
    dataset's own lengths: ShareGPT without `--sharegpt-output-len`).

    A random dataset draws each length around `random_output_len` by `random_range_ratio`:
    SGLang uniformly from [max(int(L x r), 1), L] (its default r = 0 draws from 1 to L, a
    mean of about L/2); vLLM symmetrically around L (from 0.8; before, SGLang's rule with a
    default of 1). A ratio giving a single length is a fixed length (standard deviation 0).
    """
    dataset = (_first_text(d, ("dataset_name",)) or "").lower()
    family = "random" if dataset.startswith("random") else dataset
    key = OUTPUT_LEN_OF_DATASET.get(family)
    if key is None:
        # Another dataset reads only a tool-neutral argument; with none named, any of them.
        keys = GENERIC_OUTPUT_LEN_KEYS
        if not dataset:
            keys = (*OUTPUT_LEN_OF_DATASET.values(), *GENERIC_OUTPUT_LEN_KEYS)
        length = _first_num(d, keys)
        return (length, 0.0) if length is not None else (None, None)
    length = num(d.get(key))
    if length is None or length <= 0:
        return None, None
    ratio = num(d.get("random_range_ratio")) if family == "random" else None
    if ratio is None or not 0 <= ratio <= 1:
        if family == "random" and written_by_sglang(d):
            return None, None  # SGLang's range unknown: its old default drew from 1 to L
        return length, 0.0
    if written_by_sglang(d):
        low = max(int(length * ratio), 1)
        count = length - low + 1  # a discrete uniform over [low, length]
        return (low + length) / 2, math.sqrt((count * count - 1) / 12)
    return length, length * ratio / math.sqrt(3)  # uniform over L(1 - r) .. L(1 + r)


def _first_text(d: dict, keys: Sequence[str]) -> str | None:
    for key in keys:
        if isinstance(d.get(key), str) and d[key].strip():
            return d[key].strip()
    return None


def _first_num(d: dict, keys: Sequence[str]) -> float | None:
    for key in keys:
        value = num(d.get(key))
        if value is not None:
            return value
    return None


# --- GenAI-Perf / AIPerf --------------------------------------------------------------------


def _dig(d: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(d, dict):
            return None
        d = d.get(key)
    return d


def read_genai_perf(documents: list[Document], runs: list[ParsedRun]) -> list[RunView]:
    d = documents[0].data
    config = d.get("input_config") if isinstance(d.get("input_config"), dict) else {}
    run = runs[0]
    dataset_config = _aiperf_dataset(config)
    out_tokens = (
        _dig(config, "input", "output_tokens")  # config-file layout
        or _dig(config, "input", "prompt", "output_tokens")  # AIPerf
        or _distribution(_dig(dataset_config, "prompts", "osl"))  # AIPerf 0.13: datasets[]
        or {}
    )
    requested = num(config.get("output_tokens_mean")) or num(_dig(out_tokens, "mean"))
    requested_std = num(config.get("output_tokens_stddev"))
    if requested_std is None:
        requested_std = num(_dig(out_tokens, "stddev"))
    deterministic = flag(config.get("output_tokens_mean_deterministic"))
    if deterministic is None:
        deterministic = flag(_dig(out_tokens, "deterministic"))
    extra_inputs = (
        config.get("extra_inputs")
        or _dig(config, "input", "extra")
        or _dig(config, "endpoint", "extra")  # AIPerf 0.13
    )
    ignore_eos = None
    if isinstance(extra_inputs, dict):
        ignore_eos = flag(extra_inputs.get("ignore_eos"))
    elif isinstance(extra_inputs, list | str):
        text = " ".join(map(str, extra_inputs)) if isinstance(extra_inputs, list) else extra_inputs
        if "ignore_eos" in text:
            ignore_eos = "false" not in text.lower().split("ignore_eos", 1)[1][:8]
    forced = bool(deterministic) or bool(ignore_eos)
    dataset = (
        _text(config.get("input_dataset"))
        or _text(config.get("input_file"))
        or _text(_dig(config, "input", "file"))
        or _text(_dig(config, "input", "prompt_source"))
        or _text(config.get("prompt_source"))
        or ("synthetic" if _dig(config, "input", "prompt", "input_tokens") else None)
        or _text(_dig(dataset_config, "path"))
        or _text(_dig(dataset_config, "dataset"))  # AIPerf: {"type": "public", "dataset": ...}
        or _text(_dig(dataset_config, "type"))
    )
    streaming = flag(config.get("streaming"))
    if streaming is None:
        streaming = flag(_dig(config, "endpoint", "streaming"))
    output_summary = (
        d.get("output_sequence_length") if isinstance(d.get("output_sequence_length"), dict) else {}
    )
    prompt_summary = (
        d.get("input_sequence_length") if isinstance(d.get("input_sequence_length"), dict) else {}
    )
    start = num(_dig(d, "min_request_timestamp", "avg"))
    end = num(_dig(d, "max_response_timestamp", "avg"))
    view = RunView(
        run=run,
        prompt=summary_lengths(prompt_summary, run.fields.get("request_count")),
        output=summary_lengths(output_summary, run.fields.get("request_count")),
        output_min=num(output_summary.get("min")),
        output_max=num(output_summary.get("max")),
        e2e_mean_ms=_genai_mean_ms(d.get("request_latency")),
        ttft_max_ms=run.extra.get("stats", {}).get("time_to_first_token", {}).get("max"),
        requested_output_tokens=requested,
        requested_output_std=requested_std,
        ignore_eos=forced if (deterministic is not None or ignore_eos is not None) else None,
        dataset=dataset,
        dataset_realistic=realistic(dataset),
        streaming=streaming,
        reported_rate=num(_dig(d, "request_throughput", "avg")),
        reported_rate_key="request_throughput.avg",
        started_at=None if start is None else start / 1e9,
        ended_at=None if end is None else end / 1e9,
    )
    return [view]


def _aiperf_dataset(config: dict) -> dict:
    """AIPerf 0.13's measured dataset: `datasets` is a list of named datasets; the profiling
    phase reads the one named "main" (the only one unless warm-up has its own)."""
    datasets = config.get("datasets")
    if not isinstance(datasets, list):
        return {}
    entries = [d for d in datasets if isinstance(d, dict)]
    main = [d for d in entries if d.get("name") == "main"]
    return (main or entries or [{}])[0]


def _distribution(value: Any) -> dict | None:
    """AIPerf's sampling distribution, written as a number (fixed) or {mean, stddev}."""
    if isinstance(value, dict):
        return value
    fixed = num(value)
    return None if fixed is None else {"mean": fixed, "stddev": 0.0}


def _text(value: Any) -> str | None:
    if isinstance(value, str) and value.strip():
        return value.strip()
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    return None


def _genai_mean_ms(metric: Any) -> float | None:
    if not isinstance(metric, dict):
        return None
    avg = num(metric.get("avg"))
    scale = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 1e-3, "ns": 1e-6}.get(
        str(metric.get("unit", "ms")).lower(), 1.0
    )
    return None if avg is None else avg * scale


# --- guidellm -------------------------------------------------------------------------------

SYNTHETIC_SPEC = re.compile(r"(prompt_tokens|output_tokens)[\"']?\s*[=:]\s*[\"']?(\d+)")


def read_guidellm(documents: list[Document], runs: list[ParsedRun]) -> list[RunView]:
    d = documents[0].data
    benchmarks = d.get("benchmarks") or []
    args = d.get("args") if isinstance(d.get("args"), dict) else {}
    out = []
    for index, (benchmark, run) in enumerate(zip(benchmarks, runs, strict=True)):
        config = benchmark.get("config") if isinstance(benchmark.get("config"), dict) else {}
        data_spec = (
            _text(_dig(config, "requests", "data"))  # 0.4+
            or _text(_dig(benchmark, "request_loader", "data"))  # 0.2/0.3
            or _text(args.get("data"))
            or _text(_dig(benchmark, "args", "data"))
        )
        if isinstance(args.get("data"), list):
            data_spec = data_spec or ", ".join(map(str, args["data"]))
        spec = dict((k, float(v)) for k, v in SYNTHETIC_SPEC.findall(data_spec or ""))
        metrics = benchmark.get("metrics") if isinstance(benchmark.get("metrics"), dict) else {}
        output = _dig(metrics, "output_token_count", "successful") or {}
        prompt = _dig(metrics, "prompt_token_count", "successful") or {}
        requests = _dig(benchmark, "requests", "successful")
        timings, ttfts, prompt_lens, output_lens = _guidellm_requests(requests)
        # guidellm may keep only a sample of the requests: per-request values stand for the
        # run only when they are all of them.
        complete = run.fields.get("request_count") or 0
        whole = bool(timings) and len(timings) >= complete
        per_request_lengths = len(output_lens) >= complete > 0
        view = RunView(
            run=run,
            index=index,
            prompt=(
                Lengths.from_values(prompt_lens)
                if per_request_lengths and prompt_lens
                else summary_lengths(_flat_percentiles(prompt), complete or None)
            ),
            output=(
                Lengths.from_values(output_lens)
                if per_request_lengths
                else summary_lengths(_flat_percentiles(output), complete or None)
            ),
            output_min=min(output_lens) if per_request_lengths else num(output.get("min")),
            output_max=max(output_lens) if per_request_lengths else num(output.get("max")),
            ttft_in_start_order_ms=(ttfts or None) if whole else None,
            timings=timings or None,
            e2e_mean_ms=_seconds_to_ms(num(_dig(metrics, "request_latency", "successful", "mean"))),
            ttft_max_ms=run.extra.get("latency_ms", {}).get("ttft", {}).get("max"),
            requested_output_tokens=spec.get("output_tokens"),
            requested_output_std=0.0 if "output_tokens" in spec else None,
            # guidellm's synthetic data asks the server for exactly output_tokens (ignore_eos).
            ignore_eos=True if "output_tokens" in spec else None,
            dataset="synthetic" if spec else data_spec,
            dataset_realistic=False if spec else realistic(data_spec),
            streaming=None,
            started_at=num(benchmark.get("start_time")),
            ended_at=num(benchmark.get("end_time")),
            incomplete=run.extra.get("incomplete"),
            observed_concurrency=run.extra.get("concurrency_observed_mean"),
        )
        out.append(view)
    return out


def _seconds_to_ms(value: float | None) -> float | None:
    return None if value is None else value * 1000


def _flat_percentiles(summary: dict) -> dict:
    flat = dict(summary)
    if isinstance(summary.get("percentiles"), dict):
        flat.update(summary["percentiles"])
    return flat


def _guidellm_requests(requests: Any):
    """(timings, TTFTs in start order, prompt lengths, output lengths) of the successful
    requests, from 0.2/0.3 (`start_time`, `first_token_time`, `end_time`) or 0.4+
    (`request_timings`/`timings`: `request_start`, `first_iteration`, `request_end`)."""
    if not isinstance(requests, list) or not requests:
        return [], [], [], []
    rows = []
    prompt_lens, output_lens = [], []
    for r in requests:
        if not isinstance(r, dict):
            continue
        t = r.get("request_timings") or r.get("timings") or r.get("scheduler_info") or {}
        t = t if isinstance(t, dict) else {}
        start = (
            num(r.get("start_time")) or num(t.get("request_start")) or num(t.get("resolve_start"))
        )
        first = num(r.get("first_token_time")) or num(t.get("first_iteration"))
        end = num(r.get("end_time")) or num(t.get("request_end")) or num(t.get("resolve_end"))
        ttft = num(r.get("time_to_first_token_ms"))
        if ttft is None and start is not None and first is not None:
            ttft = (first - start) * 1000
        rows.append((start, Timing(start, first, end), ttft))
        for key, into in (("prompt_tokens", prompt_lens), ("output_tokens", output_lens)):
            value = num(r.get(key))
            if value is not None:
                into.append(value)
    if any(start is None for start, _, _ in rows):
        return [], [], prompt_lens, output_lens
    rows.sort(key=lambda row: row[0])
    timings = [timing for _, timing, _ in rows]
    ttfts = [ttft for _, _, ttft in rows if ttft is not None]
    return timings, ttfts if len(ttfts) == len(rows) else [], prompt_lens, output_lens


# --- llmperf --------------------------------------------------------------------------------


def read_llmperf(documents: list[Document], runs: list[ParsedRun]) -> list[RunView]:
    d = documents[0].data
    run = runs[0]

    def lengths(name: str) -> Lengths | None:
        summary = {q: d.get(f"results_{name}_quantiles_{q}") for q in LENGTH_QUANTILES}
        summary.update(mean=d.get(f"results_{name}_mean"), std=d.get(f"results_{name}_stddev"))
        return summary_lengths(summary, run.fields.get("request_count"))

    requested_std = num(d.get("stddev_output_tokens"))
    view = RunView(
        run=run,
        prompt=lengths("number_input_tokens"),
        output=lengths("number_output_tokens"),
        output_min=num(d.get("results_number_output_tokens_min")),
        output_max=num(d.get("results_number_output_tokens_max")),
        e2e_mean_ms=_seconds_to_ms(num(d.get("results_end_to_end_latency_s_mean"))),
        ttft_max_ms=_seconds_to_ms(num(d.get("results_ttft_s_max"))),
        requested_output_tokens=num(d.get("mean_output_tokens")),
        requested_output_std=requested_std,
        ignore_eos=None,
        # llmperf samples prompts from Shakespeare's sonnets, cut to the requested lengths.
        dataset="sonnet (llmperf)",
        dataset_realistic=False,
        streaming=True,
        incomplete=None,
    )
    return [view]


def read_genai_perf_requests(documents: list[Document], runs: list[ParsedRun]) -> list[RunView]:
    """Per experiment: each request's clock, its output tokens as the parser counted them, and
    what its own payload asked for (`max_tokens`, `ignore_eos`, `stream`)."""
    d = documents[0].data
    kind = d.get("service_kind") or "openai"
    out = []
    for index, (experiment, run) in enumerate(zip(d["experiments"], runs, strict=True)):
        found = genai_perf_requests.records(Ctx(run.format), experiment, kind)
        answered = [r for r in found if r.arrivals]
        payloads = [r.payload for r in found]
        requested_mean, requested_std = mean_std(numbers([r.requested_output for r in found]))
        tokens = [r.output_tokens for r in answered]
        view = RunView(
            run=run,
            index=index,
            prompt=Lengths.from_values(numbers([r.prompt_tokens for r in answered])),
            output=Lengths.from_values(tokens),
            output_min=min(tokens) if tokens else None,
            output_max=max(tokens) if tokens else None,
            timings=[
                Timing(r.start / 1e9, r.arrivals[0] / 1e9, r.arrivals[-1] / 1e9) for r in answered
            ],
            requested_output_tokens=requested_mean,
            requested_output_std=requested_std,
            ignore_eos=_first_flag(payloads, "ignore_eos"),
            streaming=_first_flag(payloads, "stream"),
            started_at=min((r.start / 1e9 for r in answered), default=None),
            ended_at=max((r.arrivals[-1] / 1e9 for r in answered), default=None),
            observed_concurrency=run.extra.get("achieved_concurrency"),
        )
        out.append(view)
    return out


def _first_flag(payloads: list[dict], key: str) -> bool | None:
    return next((f for p in payloads if (f := flag(p.get(key))) is not None), None)


register_reader("vllm-bench", read_vllm)
register_reader("genai-perf", read_genai_perf)
register_reader("guidellm", read_guidellm)
register_reader("llmperf", read_llmperf)
register_reader(genai_perf_requests.FORMAT, read_genai_perf_requests)
