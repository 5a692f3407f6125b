"""MLPerf Inference results: the `mlperf_log_summary.txt` MLCommons' LoadGen writes for every run,
the file of every published submission (`closed/<submitter>/results/<system>/<benchmark>/
<scenario>/performance/run_1/`). A text of `Key : value` lines in three blocks: the result
(scenario, throughput, VALID or INVALID and why), "Additional Stats" (latency percentiles in
nanoseconds; for the LLM benchmarks also TTFT and TPOT), and the test parameters.

LoadGen measures on its own clock, from issuing a sample to the SUT's completion: the whole
latency (E2E), the first token (TTFT) and, per sample, (latency - TTFT) / (tokens - 1) (TPOT;
a sample's mean is its latency less TTFT over its tokens: checked on a published run, where the
mean TPOT, latency and TTFT give the tokens a sample that the token rate over the sample rate
gives). Its percentiles are nearest-rank over every sample. The load is the scenario's:

- Server: samples arrive one at a time at `target_qps` (Poisson): an open loop at that rate;
- Offline: every sample in one query at once (`samples_per_query`): a burst, whose latencies
  run from the query's start, so they include the wait behind the others;
- SingleStream: one sample at a time, the next when the last is done: concurrency 1;
- MultiStream: a query of `samples_per_query` samples at a time: that concurrency.

The summary holds no date (the run's time is asked of the importer) and no failed-request count.
"""

from __future__ import annotations

import re

from .base import (
    PERCENTILES,
    Ctx,
    Document,
    FieldRecorder,
    LoadTestFormatError,
    ParsedRun,
    mark_failed,
    present,
    rate_label,
    single_object,
)
from .registry import LoadTestFormat, register

FORMAT = "mlperf"
KEY = "mlperf_log_summary"  # the document a summary's text is read into
BANNER = "MLPerf Results Summary"
NS_PER_MS = 1_000_000.0
# LoadGen's percentile rows -> PerfHub's labels.
ROWS = {"50.00": "p50", "90.00": "p90", "95.00": "p95", "99.00": "p99", "99.90": "p999"}
LATENCY_ROWS = {
    "e2e": "{} percentile latency (ns)",
    "ttft": "{} percentile first token latency (ns)",
    "tpot": "{} percentile time to output token (ns)",
}
QPS_KEYS = ("Completed samples per second", "Samples per second", "QPS w/ loadgen overhead")
TOKEN_KEYS = ("Completed tokens per second", "Tokens per second")
INFERRED = " (inferred)"
SCENARIOS = ("Server", "Offline", "SingleStream", "MultiStream")
# What LoadGen checks for a valid result, as the summary words them.
CONDITIONS = (
    "Performance constraints satisfied",
    "Min duration satisfied",
    "Min queries satisfied",
    "Early stopping satisfied",
)
# The SLO a Server run was held to (TTFT and TPOT for the LLM benchmarks, latency otherwise).
TARGETS = {
    "ttft_latency (ns)": "ttft_ms",
    "tpot_latency (ns)": "tpot_ms",
    "target_latency (ns)": "latency_ms",
}
_LINE = re.compile(r"^\s*(?P<key>[^:]*?[^:\s])\s*:\s*(?P<value>.*?)\s*$")
_PROCESSED = re.compile(r"Processed at least \d+ queries \((?P<count>\d+)\)")


def summary_documents(text: str) -> list[Document] | None:
    """The summary as one document {KEY: {"values": {key: text}, "lines": {key: line},
    "bullets": [...]}}, or None when the text is not a LoadGen summary."""
    head = [line.strip() for line in text.splitlines()[:6]]
    if BANNER not in head:
        return None
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    bullets: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("* "):
            bullets.append(stripped[2:][:300])
            continue
        match = _LINE.match(line)
        if match is None or set(stripped) <= {"="}:
            continue
        key = " ".join(match["key"].split())
        if key not in values:  # "Completed tokens per second" is printed twice
            values[key] = match["value"]
            lines[key] = number
    return [Document({KEY: {"values": values, "lines": lines, "bullets": bullets}}, origin="text")]


def looks_like(data: dict) -> bool:
    return isinstance(data.get(KEY), dict)


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    summary = Ctx(FORMAT).obj(data, KEY)
    values = summary.get("values") if isinstance(summary.get("values"), dict) else {}
    lines = summary.get("lines") if isinstance(summary.get("lines"), dict) else {}
    bullets = [b for b in summary.get("bullets") or [] if isinstance(b, str)]

    def ctx(key: str) -> Ctx:
        line = lines.get(key)
        return Ctx(FORMAT, repr(key), line=line if isinstance(line, int) else None)

    def number(key: str) -> float | None:
        return ctx(key).number(values.get(key)) if key in values else None

    scenario = values.get("Scenario")
    if scenario not in SCENARIOS:
        raise ctx("Scenario").error(
            f"expected a scenario of {', '.join(SCENARIOS)}, got {scenario!r}"
        )
    mode = values.get("Mode", "")
    if not str(mode).startswith("Performance"):
        raise ctx("Mode").error(
            f"this is a {mode or 'non-performance'} run: it measures no latency; import the "
            "summary of the performance run (performance/run_1/mlperf_log_summary.txt)"
        )
    recorder = FieldRecorder()
    put, fields, sources = recorder.put, recorder.fields, recorder.sources
    notes: list[str] = []

    for metric, row in LATENCY_ROWS.items():
        for theirs, label in ROWS.items():
            key = row.format(theirs)
            value = number(key)
            if value is not None:
                put(f"{metric}_{label}_ms", value / NS_PER_MS, f"{key} (ns -> ms)")
    if not any(fields[f"e2e_{label}_ms"] is not None for label in PERCENTILES):
        raise LoadTestFormatError(
            f"{FORMAT}: no latency percentiles ('50.00 percentile latency (ns)' ...): "
            "is the summary cut short?"
        )

    qps_key = next((key for key in QPS_KEYS if key in values), None)
    qps = number(qps_key) if qps_key else None
    put("qps", qps, qps_key)
    token_key = next((k for k in values if k.removesuffix(INFERRED) in TOKEN_KEYS), None)
    if token_key:
        put("output_tps", number(token_key), token_key)
        if token_key.endswith(INFERRED):
            notes.append(
                "LoadGen inferred the token rate from the benchmark's expected tokens a "
                "sample; it did not count the tokens"
            )

    per_query = number("samples_per_query")
    samples_per_query = int(per_query) if per_query is not None else None
    concurrency = count = rate = None
    rate_inf = scenario != "Server"
    if scenario == "Server":
        rate = number("target_qps")
        put("request_rate", rate, "target_qps (LoadGen's Poisson arrival rate)")
    elif scenario == "Offline":
        concurrency = count = samples_per_query
        put("concurrency", concurrency, "samples_per_query (every sample at once)")
        notes.append(
            "Offline: every sample is issued at once, so each latency includes the wait "
            "behind the others"
        )
    elif scenario == "SingleStream":
        concurrency = 1
        put("concurrency", 1, "Scenario : SingleStream (one sample at a time)")
        processed = next((m for b in bullets if (m := _PROCESSED.search(b))), None)
        count = int(processed["count"]) if processed else None
        if count is not None:
            sources["request_count"] = "Early Stopping Result: 'Processed at least N queries (n)'"
    else:
        concurrency = samples_per_query
        put("concurrency", concurrency, "samples_per_query (one query of them at a time)")
    if count is not None:
        put("request_count", count, sources.get("request_count", "samples_per_query"))
        if qps:
            put("duration_s", count / qps, f"request count / {qps_key} (derived)")

    result = values.get("Result is")
    failed = [c for c in CONDITIONS if str(values.get(c, "")).lower() == "no"]
    if result != "VALID":
        reasons = f": {', '.join(c.lower() for c in failed)}: no" if failed else ""
        advice = f" ({'; '.join(bullets[:3])})" if bullets else ""
        notes.append(f"LoadGen judged the run {result or 'not valid'}{reasons}{advice}")
    targets = {
        ours: number(theirs) / NS_PER_MS
        for theirs, ours in TARGETS.items()
        if number(theirs)  # 0: no target
    }
    extra = {
        "sut_name": values.get("SUT name"),
        "scenario": scenario,
        "mode": mode,
        "result": result,
        "conditions_not_met": failed,
        "latency_targets": targets,  # the SLO the submission was held to
        "min_duration_ms": number("min_duration (ms)"),
        "early_stopping": [b for b in bullets if "percentile estimate" in b],
        "notes": notes,
    }
    load = rate_label(concurrency, rate, rate_inf and concurrency is None)
    run = ParsedRun(
        format=FORMAT,
        tool_version=None,  # the summary does not name the LoadGen version
        label=f"MLPerf {scenario} {load}".strip(),
        measured_at=None,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=None,
        samples={},
        extra=present(extra),
        sources=sources,
    )
    return [mark_failed(run)]


register(
    LoadTestFormat(
        name=FORMAT,
        priority=49,
        label="MLPerf Inference LoadGen summary",
        parse=parse,
        looks_like=looks_like,
        required=(KEY,),
        signature=(KEY,),
        filename_hints=("mlperf_log_summary",),
        # A submission's run folder: LoadGen's detail log and trace, the accuracy run's files.
        side_files=(
            "mlperf_log_detail.txt",
            "mlperf_log_trace.json",
            "mlperf_log_accuracy.json",
            "accuracy.txt",
            "measurements.json",
            "*.conf",
        ),
    )
)
