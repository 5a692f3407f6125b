"""What every load-test parser returns, and the validated readers they share.

Pure Python, no Django: a parser turns a tool's JSON into `ParsedRun`s whose `fields` use
exactly the `MeasuredRun` column names, so a caller can store them without renaming.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from analysis import plausibility
from analysis.percentiles import LATENCY_FIELDS, PERCENTILE_LABELS
from analysis.runs import RESOURCE_FIELDS, THROUGHPUT_FIELDS, WORKLOAD_FIELDS

from . import per_request

# The MeasuredRun percentile columns, and the label each is stored under.
PERCENTILES = PERCENTILE_LABELS

FIELD_NAMES = (*WORKLOAD_FIELDS, *THROUGHPUT_FIELDS, *LATENCY_FIELDS, *RESOURCE_FIELDS)

SAMPLE_KEYS = ("ttft", "tpot", "itl", "e2e")

Number = float | int


# A run's time that the file gives every run of a sweep alike (llm-d stamps each inference-perf
# stage's report with the harness's window): a date, not the run's own start, so the twin test
# does not compare it (`importing._refuse_a_twin`).
SHARED_TIME_NOTE = "the harness's window, the same for every stage: not the stage's own start"


# `ParsedRun.extra` key: the figures another file of the same run writes, as its tool computes
# them from this file (GenAI-Perf's summary from its per-request export), so the import can tell
# that file's run for this one (`importing._refuse_a_twin`).
TWIN_FIGURES = "twin_figures"


class LoadTestFormatError(ValueError):
    """A file that cannot be read as the load-test format it claims (or was detected) to be."""


@dataclass
class ParsedRun:
    """One load-test run, normalized: ms, seconds, tokens/s, ratios 0-1; missing is None."""

    format: str
    tool_version: str | None
    label: str
    measured_at: datetime | None
    fields: dict[str, Number | None]
    request_rate_inf: bool = False
    errors: int | None = None
    samples: dict[str, list[float]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # Field name (or "errors", "measured_at") -> the file key it came from and how it was derived.
    sources: dict[str, str] = field(default_factory=dict)
    # A run with no successful request: its statistics are absent, and it is never a reference.
    failure: str | None = None

    @property
    def failed(self) -> bool:
        return self.failure is not None

    @property
    def workload_shape(self) -> tuple[int | None, float | None, float | None, float | None]:
        """(concurrency, request rate or math.inf, prompt tokens mean, output tokens mean)."""
        rate = math.inf if self.request_rate_inf else self.fields.get("request_rate")
        return (
            self.fields.get("concurrency"),
            rate,
            self.fields.get("prompt_tokens_mean"),
            self.fields.get("output_tokens_mean"),
        )


def present(values: dict[str, Any]) -> dict[str, Any]:
    """`values` without the empty ones (None, {}, []): what a run's `extra` keeps."""
    return {key: value for key, value in values.items() if value not in (None, {}, [])}


def empty_fields() -> dict[str, Number | None]:
    return dict.fromkeys(FIELD_NAMES)


@dataclass
class FieldRecorder:
    """A run's fields as a parser fills them, and for each the file key it came from (the run's
    page shows it). A value the file lacks (None) is not recorded."""

    fields: dict[str, Number | None] = field(default_factory=empty_fields)
    sources: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, value, source: str) -> None:
        if value is not None:
            self.fields[name] = value
            self.sources[name] = source


# What a run without a single successful request cannot have: tools write 0.0 for these.
RESULT_FIELDS = ("qps", "input_tps", "output_tps", *LATENCY_FIELDS)


def plain(value: Any, depth: int = 0) -> Any:
    """`value` with non-finite floats as None, so `extra` is valid JSON whatever the file held."""
    if depth > 64:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(item, depth + 1) for item in value]
    return value


def finish(run: ParsedRun) -> ParsedRun:
    """What every parser's run goes through (built-in or registered): finite fields, a JSON
    `extra`, latency columns the file left empty taken from its per-request samples
    (`per_request`), and the failed-run rule."""
    run.extra = plain(run.extra)
    try:
        stats = per_request.sample_statistics(run.samples)
    except ValueError as exc:
        raise LoadTestFormatError(f"{run.format}: {exc}") from None
    for name, (value, source) in per_request.missing_latency_fields(run.fields, stats).items():
        run.fields[name] = value
        run.sources[name] = source
    return mark_failed(run)


def mark_failed(run: ParsedRun) -> ParsedRun:
    """Flag a run in which no request succeeded; its zeros are "no data", so they become None.

    vLLM writes 0.0 for every statistic when `completed` is 0 and a near-zero `duration`;
    other tools do likewise. Such a run is kept (the failure is worth seeing) but never compared.
    """
    for name, value in run.fields.items():
        # A ratio of two valid numbers can still overflow (1e308 tokens over 1e-300 s).
        if value is not None and not math.isfinite(value):
            where = run.sources.get(name, name)
            raise LoadTestFormatError(f"{run.format}: {where}: {name} is not a finite number")
    check_plausible(run)
    count = run.fields.get("request_count")
    duration = run.fields.get("duration_s")
    latencies = [run.fields[name] for name in LATENCY_FIELDS if run.fields[name] is not None]
    if count == 0:
        reason = "no request succeeded (0 completed)"
    elif duration == 0:
        reason = "the run lasted 0 seconds"
    elif latencies and not any(latencies) and not run.fields.get("output_tps"):
        reason = "every latency statistic is 0"
    else:
        return run
    for name in RESULT_FIELDS:
        run.fields[name] = None
        run.sources.pop(name, None)
    run.samples = {}
    run.failure = reason
    return run


def check_plausible(run: ParsedRun) -> None:
    """LoadTestFormatError naming the field (and the file key it came from) when a value is
    outside its physical range or a percentile is below a lower one (analysis.plausibility);
    per-request samples too, and TTFT <= E2E for each request when the tool lists both."""
    for name, why in plausibility.run_problems(run.fields):
        where = run.sources.get(name, name)
        raise LoadTestFormatError(f"{run.format}: {where}: {name}: {why}")
    for key, values in run.samples.items():
        for i, value in enumerate(values):
            if why := plausibility.LATENCY_MS.problem(value):
                raise LoadTestFormatError(f"{run.format}: samples.{key}[{i}]: {why}")
    ttfts, e2es = run.samples.get("ttft"), run.samples.get("e2e")
    if ttfts and e2es and len(ttfts) == len(e2es):  # listed per request, in the same order
        for i, (ttft, e2e) in enumerate(zip(ttfts, e2es, strict=True)):
            if why := plausibility.ttft_problem(ttft, e2e):
                raise LoadTestFormatError(f"{run.format}: request {i}: {why}")


class Ctx:
    """Where in the file we are, so every error names the format and the key or line at fault."""

    def __init__(
        self, fmt: str, path: str = "", *, line: int | None = None, item: int | None = None
    ) -> None:
        self.fmt = fmt
        self.path = path
        self.line = line  # set for JSON-lines files: errors then say "line 3"
        self.item = item  # set for a top-level list of runs: errors then say "run 2"

    def at(self, key: str | int) -> Ctx:
        if isinstance(key, int):
            path = f"{self.path}[{key}]"
        else:
            path = f"{self.path}.{key}" if self.path else key
        return Ctx(self.fmt, path, line=self.line, item=self.item)

    def error(self, message: str) -> LoadTestFormatError:
        parts = (
            f"line {self.line}" if self.line else "",
            f"run {self.item + 1}" if self.item is not None else "",
            self.path,
        )
        where = "".join(f"{part}: " for part in parts if part)
        return LoadTestFormatError(f"{self.fmt}: {where}{message}")

    # -- readers: each validates the value and names the key when it is wrong --------------

    def obj(self, data: dict, key: str, *, required: bool = True) -> dict | None:
        value = self._get(data, key, required)
        if value is None:
            return None
        if not isinstance(value, dict):
            raise self.at(key).error("expected an object")
        return value

    def array(self, data: dict, key: str, *, required: bool = True) -> list | None:
        value = self._get(data, key, required)
        if value is None:
            return None
        if not isinstance(value, list):
            raise self.at(key).error("expected a list")
        return value

    def num(
        self, data: dict, key: str, *, required: bool = False, negative_ok: bool = False
    ) -> float | None:
        """A number; numeric strings ("508") are accepted, since some tools write them."""
        value = self.at(key).number(self._get(data, key, required), negative_ok=negative_ok)
        if value is None and required:
            raise self.at(key).error("expected a number, got NaN")
        return value

    def integer(self, data: dict, key: str, *, required: bool = False) -> int | None:
        value = self.num(data, key, required=required)
        if value is None:
            return None
        if value != int(value):
            raise self.at(key).error(f"expected a whole number, got {value!r}")
        return int(value)

    def text(self, data: dict, key: str) -> str | None:
        value = data.get(key)
        if value is None:
            return None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise self.at(key).error("expected a string")
        return str(value)

    def number(self, value: Any, *, negative_ok: bool = False) -> float | None:
        """Validate one value at this path; None and NaN mean missing."""
        if value is None:
            return None
        if isinstance(value, bool):
            raise self.error(f"expected a number, got {value!r}")
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise self.error(f"expected a number, got {value!r}") from None
        if not isinstance(value, int | float):
            raise self.error(f"expected a number, got {type(value).__name__}")
        try:
            value = float(value)
        except OverflowError:  # an integer beyond a double's range
            raise self.error("expected a finite number") from None
        if math.isnan(value):
            return None
        if math.isinf(value):
            raise self.error("expected a finite number")
        if value < 0 and not negative_ok:
            raise self.error(f"expected a number >= 0, got {value!r}")
        return value

    def numbers(self, values: list) -> list[float | None]:
        return [self.at(i).number(v) for i, v in enumerate(values)]

    def _get(self, data: dict, key: str, required: bool) -> Any:
        if key not in data:
            if required:
                raise self.error(f"missing key {key!r}")
            return None
        value = data[key]
        if value is None and required:
            raise self.at(key).error("expected a value, got null")
        return value


def epoch_to_datetime(ctx: Ctx, value: float | None) -> datetime | None:
    if value is None:
        return None
    try:
        return datetime.fromtimestamp(value, tz=UTC)
    except (OverflowError, OSError, ValueError):
        raise ctx.error(f"not a Unix timestamp: {value!r}") from None


def mean_std(values: Iterable[float]) -> tuple[float | None, float | None]:
    """Mean and population standard deviation (numpy's default, as the tools use)."""
    data = list(values)
    if not data:
        return None, None
    return statistics.fmean(data), statistics.pstdev(data)


def missing_keys(keys: list[str]) -> str:
    quoted = ", ".join(repr(key) for key in keys)
    return f"missing key {quoted}" if len(keys) == 1 else f"missing keys {quoted}"


def first_of(data: dict, keys: tuple[str, ...]) -> str | None:
    """The first of `keys` present (and not null) in `data`: renamed keys across tool versions."""
    return next((key for key in keys if data.get(key) is not None), None)


def ratio_or_none(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def product_or_none(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a * b


def arrival(pattern: str | None, burstiness: float | None = None) -> str | None:
    """How an open-loop run's requests arrived, in one wording for every tool, where not Poisson
    (every tool's default: vLLM's and SGLang's `--burstiness 1`, AIPerf's `--arrival-pattern`):
    "constant arrivals", or "gamma arrivals, burstiness B" (AIPerf's smoothness is vLLM's
    burstiness; 1 is Poisson). None for Poisson or an unknown pattern."""
    if pattern == "constant":
        return "constant arrivals"
    if pattern == "gamma" and burstiness is not None and burstiness != 1:
        return f"gamma arrivals, burstiness {burstiness:g}"
    return None


def rate_label(concurrency: int | None, rate: float | None, rate_inf: bool) -> str:
    """How a run's load is named in labels: "c=16", "4 req/s", "c=16 rate=inf"."""
    parts = []
    if concurrency is not None:
        parts.append(f"c={concurrency}")
    if rate is not None:
        parts.append(f"{rate:g} req/s")
    elif rate_inf and concurrency is None:
        parts.append("rate=inf")
    return " ".join(parts)


@dataclass(frozen=True)
class Document:
    """One JSON value from the file; `line` is set when the file is JSON lines."""

    data: Any
    line: int | None = None
    item: int | None = None  # position in a top-level JSON list
    # What the text was when it was not JSON: "csv" (a tool's CSV export), "console" (a log).
    origin: str = "json"

    def ctx(self, fmt: str) -> Ctx:
        return Ctx(fmt, line=self.line, item=self.item)


def single_object(fmt: str, documents: list[Document]) -> dict:
    """Formats that write one JSON object per file refuse JSON lines and non-objects."""
    if len(documents) != 1:
        kind = "JSON lines" if documents[0].line else "objects in a list"
        raise LoadTestFormatError(f"{fmt}: expected one JSON object, found {len(documents)} {kind}")
    data = documents[0].data
    if not isinstance(data, dict):
        raise LoadTestFormatError(f"{fmt}: expected a JSON object, got a {json_type(data)}")
    return data


def json_type(value: Any) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean"}.get(
        type(value), "number" if isinstance(value, int | float) else "null"
    )
