"""Every lint check on broken-but-parseable variants of real files, one defect each, and the
real corpus: which findings its clean files get, and why.

The variants are the real files of tests/fixtures/real/ (and the project's 400-request vLLM file
where a check needs per-request arrays) with one defect put in, the way users report it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from loadtests.importing import LoadTestImportError, lint_file, parse_file
from loadtests.lint import check_names
from tests.support import REAL, VLLM, VLLM_ARRAYS

VLLM_SWEEP = REAL / "vllm-bench" / "er0080-sweep-max_num_seqs8-summary.json"
AIPERF = REAL / "genai-perf" / "wellflat-aiperf-profile_export_aiperf.json"
AIPERF_013 = REAL / "genai-perf" / "e2e-aiperf-0.13.0-c2-profile_export_aiperf.json"
GUIDELLM = REAL / "guidellm" / "guidellm-repo-0.2-benchmarks_stripped.json"
GUIDELLM_05 = REAL / "guidellm" / "danielkorat-0.5.0dev-synchronous-qwen3-30b.json"
LLMPERF = REAL / "llmperf" / "leaderboard-groq_70b.json"
SGLANG_SWEEP = REAL / "sglang-bench" / "e2e-sglang-0.5.23-rate-sweep.jsonl"
SGLANG_H200 = REAL / "sglang-bench" / "datacrunch-h200-llama_3_3_70b_online_output.jsonl"


def findings(path: Path, edit: Callable[[dict | list], None] | None = None, run: int = 0):
    data = json.loads(path.read_text())
    if edit is not None:
        edit(data)
    content = json.dumps(data).encode()
    runs = parse_file(content, filename=path.name)
    return lint_file(content, runs)[run].findings


def line_findings(path: Path, run: int, edit: Callable[[dict], None] | None = None):
    """`findings` of one run of a JSON-lines file (SGLang's), its line edited first."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    if edit is not None:
        edit(lines[run])
    content = "\n".join(json.dumps(line) for line in lines).encode()
    return lint_file(content, parse_file(content, filename=path.name))[run].findings


def severities(found) -> dict[str, str]:
    return {f.check: str(f.severity) for f in found}


# --- the defects ------------------------------------------------------------------------------


def vllm_tiny(d):
    d["total_output_tokens"] = d["completed"]  # one token per request
    d["output_throughput"] = d["completed"] / d["duration"]


def vllm_not_honoured(d):
    d.update(random_output_len=64, ignore_eos=True)  # asked 64 forced, got 16


def vllm_cold_start(d):
    d["ttfts"][:4] = [t * 60 for t in d["ttfts"][:4]]


def vllm_capped(d):
    d["max_concurrency"] = 64  # 400 requests kept ~16 in flight


def vllm_capped_small_run(d):
    # 8 requests of ~0.34 s in 1.37 s: ~2 in flight where all 8 could have run at once; so few
    # requests with such a tail cannot tell a capped client from a drain (ideal ~3.1): a warning.
    d["max_concurrency"] = 64


def vllm_failed(d):
    d.update(failed=3, num_prompts=11)


def vllm_realistic_fixed(d):
    d["dataset_name"] = "sharegpt"
    d["output_lens"] = [256] * len(d["output_lens"])


def vllm_duration(d):
    d["duration"] *= 3  # request_throughput left as it was


def vllm_impossible(d):
    d["p99_ttft_ms"] = d["median_ttft_ms"] / 2


def vllm_too_short(d):
    d.update(completed=30, num_prompts=30)
    for key in ("ttfts", "itls", "input_lens", "output_lens", "errors", "generated_texts"):
        if isinstance(d.get(key), list):
            d[key] = d[key][:30]


def vllm_sweep_mixed(d):
    d[1]["total_input_tokens"] *= 3  # point 2 used prompts three times as long


def aiperf_tiny(d):
    d["output_sequence_length"].update(avg=1.0, p25=1, p50=1, p75=1, p90=1, min=1, max=2, std=0.3)


def aiperf_not_honoured(d):
    d["input_config"]["input"]["prompt"]["output_tokens"] = {"mean": 600, "stddev": 0}


def aiperf_forced_not_honoured(d):
    aiperf_not_honoured(d)
    d["input_config"]["input"]["extra"] = {"ignore_eos": True}


def aiperf_013_forced_not_honoured(d):
    # 0.13 writes datasets[] and endpoint.extra; this run asked ignore_eos.
    d["input_config"]["datasets"][0]["prompts"]["osl"] = {"mean": 600.0, "stddev": 0.0}


def aiperf_013_not_honoured(d):
    aiperf_013_forced_not_honoured(d)
    del d["input_config"]["endpoint"]["extra"]


def aiperf_013_capped(d):
    d["input_config"]["phases"][0]["concurrency"] = 8  # it measured 1.97 in flight


def aiperf_capped(d):
    d["input_config"]["loadgen"]["concurrency"] = 8


def aiperf_failed(d):
    d["error_request_count"] = {"unit": "requests", "avg": 20}


def aiperf_duration(d):
    d["benchmark_duration"]["avg"] *= 2


def aiperf_impossible(d):
    d["time_to_first_token"]["p50"] = d["request_latency"]["p50"] * 2


def aiperf_cold_start(d):
    d["time_to_first_token"]["max"] = d["time_to_first_token"]["p99"] * 20


def aiperf_realistic_fixed(d):
    d["input_config"]["input"]["file"] = "ShareGPT_V3_unfiltered_cleaned_split.json"
    d["output_sequence_length"].update(
        {k: 300.0 for k in ("avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99")},
        min=300.0,
        max=300.0,
        std=0.0,
    )


def _bench(d):
    return d["benchmarks"][0]


def guidellm_unfinished(d):
    _bench(d)["request_totals"].update(incomplete=400, total=446)  # a throughput step


def guidellm_failed(d):
    _bench(d)["request_totals"].update(errored=10, total=57)


def guidellm_capped(d):
    _bench(d)["args"]["strategy"] = {"type_": "concurrent", "streams": 8}


def guidellm_tiny(d):
    summary = _bench(d)["metrics"]["output_token_count"]["successful"]
    summary.update(mean=1.0, median=1.0, min=1.0, max=1.0, total_sum=46.0)
    summary["percentiles"] = {k: 1.0 for k in summary["percentiles"]}


def guidellm_not_honoured(d):
    summary = _bench(d)["metrics"]["output_token_count"]["successful"]
    summary.update(mean=60.0, median=60.0, total_sum=2760.0)
    summary["percentiles"] = {k: 60.0 for k in summary["percentiles"]}


def guidellm_duration(d):
    _bench(d)["duration"] *= 3  # the tool's own concurrency measurement stays ~1


def guidellm_impossible(d):
    ttft = _bench(d)["metrics"]["time_to_first_token_ms"]["successful"]
    ttft["median"] = _bench(d)["metrics"]["request_latency"]["successful"]["median"] * 3000


def guidellm_cold_start(d):
    bench = _bench(d)
    start = bench["start_time"]
    bench["requests"]["successful"] = [
        {
            "start_time": start + i,
            "first_token_time": start + i + (9.0 if i < 3 else 0.05),
            "end_time": start + i + (9.5 if i < 3 else 0.6),
            "prompt_tokens": 256,
            "output_tokens": 128,
        }
        for i in range(46)
    ]


def guidellm_bad_timestamps(d):
    guidellm_cold_start(d)
    request = _bench(d)["requests"]["successful"][5]
    request["end_time"] = request["start_time"] - 1


def llmperf_tiny(d):
    for key in list(d):
        if (
            key.startswith("results_number_output_tokens_")
            and key != "results_number_output_tokens_stddev"
        ):
            d[key] = 1


def llmperf_not_honoured(d):
    d["results_number_output_tokens_mean"] = 80.0
    for q in ("p25", "p50", "p75", "p90", "p95", "p99"):
        d[f"results_number_output_tokens_quantiles_{q}"] = 80.0


def llmperf_failed(d):
    d.update(results_number_errors=30, results_num_requests_started=180, results_error_rate=0.17)


def llmperf_capped(d):
    d["num_concurrent_requests"] = 20


def llmperf_impossible(d):
    d["results_ttft_s_quantiles_p50"] = d["results_end_to_end_latency_s_quantiles_p50"] * 2


def llmperf_cold_start(d):
    d["results_ttft_s_max"] = d["results_ttft_s_quantiles_p99"] * 20


def llmperf_duration(d):
    d["results_num_completed_requests_per_min"] *= 10


CASES = [
    # (file, defect, check, severity)
    (VLLM, vllm_tiny, "tiny_outputs", "refuse"),
    (VLLM, vllm_not_honoured, "output_length", "refuse"),
    (VLLM_ARRAYS, vllm_cold_start, "cold_start", "refuse"),
    (VLLM_ARRAYS, vllm_capped, "offered_load", "refuse"),
    (VLLM, vllm_capped_small_run, "offered_load", "warn"),
    (VLLM, vllm_failed, "failed_share", "refuse"),
    (VLLM_ARRAYS, vllm_realistic_fixed, "zero_variance", "warn"),
    (VLLM, vllm_duration, "duration", "refuse"),
    (AIPERF, aiperf_tiny, "tiny_outputs", "refuse"),
    (AIPERF, aiperf_not_honoured, "output_length", "warn"),  # not forced: a cap
    (AIPERF, aiperf_forced_not_honoured, "output_length", "refuse"),
    (AIPERF, aiperf_capped, "offered_load", "refuse"),
    (AIPERF, aiperf_failed, "failed_share", "refuse"),
    (AIPERF, aiperf_duration, "duration", "refuse"),
    (AIPERF, aiperf_realistic_fixed, "zero_variance", "warn"),
    (AIPERF, aiperf_cold_start, "cold_start", "warn"),  # a summary: which request is unknown
    (AIPERF_013, aiperf_013_forced_not_honoured, "output_length", "refuse"),
    (AIPERF_013, aiperf_013_not_honoured, "output_length", "warn"),
    (AIPERF_013, aiperf_013_capped, "offered_load", "refuse"),
    (GUIDELLM, guidellm_unfinished, "unfinished", "refuse"),
    (GUIDELLM, guidellm_failed, "failed_share", "refuse"),
    (GUIDELLM, guidellm_capped, "offered_load", "refuse"),
    (GUIDELLM, guidellm_tiny, "tiny_outputs", "refuse"),
    (GUIDELLM, guidellm_not_honoured, "output_length", "refuse"),
    (GUIDELLM, guidellm_duration, "duration", "refuse"),
    (GUIDELLM, guidellm_cold_start, "cold_start", "refuse"),
    (GUIDELLM, guidellm_bad_timestamps, "impossible", "refuse"),
    (LLMPERF, llmperf_tiny, "tiny_outputs", "refuse"),
    (LLMPERF, llmperf_not_honoured, "output_length", "warn"),  # llmperf sets max_tokens only
    (LLMPERF, llmperf_failed, "failed_share", "refuse"),
    (LLMPERF, llmperf_capped, "offered_load", "refuse"),
    (LLMPERF, llmperf_duration, "duration", "refuse"),
    (LLMPERF, llmperf_cold_start, "cold_start", "warn"),
]


@pytest.mark.parametrize(
    ("path", "defect", "check", "severity"),
    CASES,
    ids=[f"{p.parent.name}-{d.__name__}" for p, d, _, _ in CASES],
)
def test_a_broken_file_gets_the_finding_for_its_defect(path, defect, check, severity):
    assert severities(findings(path, defect)).get(check) == severity


# Percentiles of one distribution out of order are refused before the lint runs (the import's
# plausibility rule, analysis.plausibility): the file is not stored at all, naming the field.
IMPOSSIBLE_PERCENTILES = [
    (VLLM, vllm_impossible),
    (AIPERF, aiperf_impossible),
    (GUIDELLM, guidellm_impossible),
    (LLMPERF, llmperf_impossible),
]


@pytest.mark.parametrize(
    ("path", "defect"),
    IMPOSSIBLE_PERCENTILES,
    ids=[f"{p.parent.name}-{d.__name__}" for p, d in IMPOSSIBLE_PERCENTILES],
)
def test_a_file_with_impossible_percentiles_is_refused_naming_the_field(path, defect):
    with pytest.raises(LoadTestImportError, match=r"_ms: .* never decrease|above"):
        findings(path, defect)


def test_every_check_is_exercised_by_a_broken_file():
    exercised = {check for _, _, check, _ in CASES} | {"sweep_workloads", "too_short"}
    assert exercised == set(check_names())


def test_a_run_too_short_for_its_p99_is_told_how_many_requests_it_needs():
    # The clean 400-request file only misses P99.9; cut to 30 requests its P99 rests on nothing.
    found = next(f for f in findings(VLLM_ARRAYS, vllm_too_short) if f.check == "too_short")
    assert "p99" in found.evidence["tail_samples"] and found.evidence["requests"] == 30


def test_sweep_points_with_different_prompts_are_named():
    found = findings(VLLM_SWEEP, vllm_sweep_mixed, run=1)
    sweep = next(f for f in found if f.check == "sweep_workloads")
    assert "prompt length" in sweep.message and "run 2" in sweep.message


def test_a_finding_carries_its_evidence_and_fix():
    found = next(f for f in findings(VLLM_ARRAYS, vllm_capped) if f.check == "offered_load")
    assert found.evidence["configured"] == 64 and found.evidence["achieved"] < 20
    assert "connection limit" in found.fix


# --- what a run asked for is read from its own dataset's arguments ------------------------------


@pytest.mark.parametrize("path", [SGLANG_SWEEP, SGLANG_H200], ids=lambda p: p.name)
def test_random_lengths_drawn_up_to_the_asked_one_are_not_a_shortfall(path):
    # random_range_ratio 0: SGLang draws each length from 1 to random_output_len (mean ~L/2).
    assert "output_length" not in severities(line_findings(path, 0))


def test_a_sharegpt_run_asks_for_no_output_length_whatever_random_output_len_says():
    assert "output_length" not in severities(line_findings(SGLANG_H200, 5))


def drawn_mean(tokens_per_request: float):
    def edit(d):
        d["total_output_tokens"] = round(tokens_per_request * d["completed"])
        d["output_throughput"] = d["total_output_tokens"] / d["duration"]

    return edit


def test_a_drawn_mean_within_its_sampling_error_is_not_a_shortfall():
    # 200 lengths drawn from 1..32: mean 16.5, standard error 0.65; 14.6 is below 90% of 16.5
    # but within three standard errors of it.
    found = severities(line_findings(SGLANG_SWEEP, 0, drawn_mean(14.6)))
    assert "output_length" not in found


def test_a_drawn_mean_far_below_the_draw_is_a_shortfall():
    found = severities(line_findings(SGLANG_SWEEP, 0, drawn_mean(12.0)))
    assert found.get("output_length") == "warn"


def test_sglang_runs_are_checked_against_the_concurrency_sglang_measured():
    path = REAL / "sglang-bench" / "e2e-sglang-0.5.23-c4-details.jsonl"
    assert "offered_load" not in severities(line_findings(path, 0))  # 3.98 of 4 in flight

    def starved(d):
        d["concurrency"] = 1.0  # what SGLang would print had its client held one request

    found = next(f for f in line_findings(path, 0, starved) if f.check == "offered_load")
    assert found.evidence["basis"] == "the tool's own mean concurrency"


def sglang_fixed_length(d):
    d["random_range_ratio"] = 1.0  # every request asked for 1,024; the mean was 534


def test_a_fixed_length_sglang_run_short_of_it_is_warned():
    found = severities(line_findings(SGLANG_H200, 0, sglang_fixed_length))
    assert found.get("output_length") == "warn"  # SGLang's ignore_eos was not recorded


def test_an_open_loop_run_whose_requests_failed_is_not_called_saturated():
    # vLLM 0.32 at 20 req/s, 20 of 30 prompts past the model's context: 30 sent in 1.56 s.
    path = REAL / "vllm-bench" / "e2e-vllm-0.32.0-cpu-rate20-prompts-past-context.json"
    found = severities(findings(path))
    assert (found.get("failed_share"), found.get("offered_load")) == ("refuse", None)


def test_an_open_loop_run_that_sent_too_few_requests_is_still_called_saturated():
    path = REAL / "vllm-bench" / "e2e-vllm-0.32.0-cpu-rate20-prompts-past-context.json"

    def slow_client(d):
        d["duration"] *= 3  # 30 requests over 4.7 s: 6.4 req/s of the 20 named

    assert severities(findings(path, slow_client)).get("offered_load") == "refuse"


# --- the real corpus: clean, or its findings explained -----------------------------------------

# Refusing findings the real files get, and why each is right: these runs are broken as published.
EXPLAINED_REFUSALS = {
    # 49 of 150 requests failed at the provider (llmperf leaderboard, Bedrock).
    "leaderboard-bedrock_70b.json": {"failed_share"},
    # 130 of 150 requests failed (Lepton).
    "leaderboard-lepton_13b.json": {"failed_share"},
    # The 16 req/s point achieved 8.35 req/s: saturated, as published (SGLang on 8x H200).
    "datacrunch-h200-llama_3_3_70b_online_output.jsonl": {"offered_load"},
    # A trace-driven SGLang fork: ~3.8 req/s arrived whatever the rate printed (8 to 64).
    "william-qmul-sglang-dlora-sglang_results.md": {"offered_load"},
    # Made to fail: 3 of 20 prompts past the tiny model's 512-token context (inference-perf).
    "e2e-inference-perf-0.7.0-no-stream-context-errors-stage_0_lifecycle_metrics.json": {
        "failed_share"
    },
    "e2e-inference-perf-0.7.0-no-stream-context-errors-summary_lifecycle_metrics.json": {
        "failed_share"
    },
    # Made to fail: 20 of 30 prompts past the tiny model's 512-token context (vLLM 0.32).
    "e2e-vllm-0.32.0-cpu-rate20-prompts-past-context.json": {"failed_share"},
    # Made to queue in the client: 40 req/s offered, --max-concurrency 2 served 23-25 (vLLM 0.32).
    "e2e-vllm-0.32.0-cpu-rate40-c2-client-queue-detailed.json": {"offered_load"},
    "e2e-vllm-0.32.0-cpu-rate40-c2-default-metrics.json": {"offered_load"},
    "e2e-vllm-0.32.0-rate40-c2-client-queue-console.log": {"offered_load"},
    "e2e-vllm-0.32.0-cpu-rate40-c2-client-queue-console-twin.json": {"offered_load"},
    # Written to show a failed request: 1 of 5 failed.
    "written-here-benchmark_serving-0.4.0-with-failure.json": {"failed_share"},
}


def real_files():
    for path in sorted(REAL.glob("*/*")):
        if (
            path.suffix in (".json", ".jsonl", ".yaml", ".log", ".md", ".csv")
            and "zhangxinyuehfad" not in path.name
        ):
            yield path


@pytest.mark.parametrize("path", list(real_files()), ids=lambda p: p.name)
def test_real_files_get_refusing_findings_only_where_explained(path):
    content = path.read_bytes()
    runs = parse_file(content, filename=path.name)
    refusing = {f.check for lint in lint_file(content, runs) for f in lint.refusing}
    assert refusing == EXPLAINED_REFUSALS.get(path.name, set())


# --- thresholds are settings --------------------------------------------------------------------


def test_a_threshold_setting_changes_the_verdict(settings):
    settings.PERFHUB_LINT = {"failed_refuse_share": 0.5}  # 49 of 150 failed: 33%
    found = findings(REAL / "llmperf" / "leaderboard-bedrock_70b.json")
    assert severities(found)["failed_share"] == "warn"


def test_an_unknown_threshold_fails_the_system_check(settings):
    from loadtests.checks import check_lint_thresholds

    settings.PERFHUB_LINT = {"failed_share_max": 0.5}
    (error,) = check_lint_thresholds()
    assert "unknown threshold 'failed_share_max'" in error.msg


def test_a_registered_check_runs_on_every_import():
    from loadtests.lint import Check, Finding, Severity, register, unregister

    def few(view, t):
        return [Finding("few", Severity.WARN, f"{view.count} requests", "run more", {})]

    register(Check("few", "a throwaway check", few))
    try:
        assert "few" in severities(findings(LLMPERF))
    finally:
        unregister("few")
