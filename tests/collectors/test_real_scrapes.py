"""Real /metrics text (tests/fixtures/real/metrics, sources in SOURCES.md) read right.

Expected values are read by hand from the files.
"""

import re

import pytest

from analysis.buckets import quantile
from collectors.exposition.engines import VLLM
from collectors.exposition.scrape import parse, sources_reading
from collectors.exposition.window import window as scrape_window


@pytest.fixture
def scrape(fixtures_dir):
    def scrape(name: str, source: str):
        return parse((fixtures_dir / "real" / "metrics" / name).read_text(), source)

    return scrape


def test_sglang_docs_scrape_token_counters(scrape):
    parsed = scrape("sglang-docs-production_metrics.prom", "sglang")
    assert parsed.counter_total("prompt_tokens") == 8_128_902
    assert parsed.counter_total("generation_tokens") == 7_557_572


def test_sglang_docs_scrape_gauges(scrape):
    parsed = scrape("sglang-docs-production_metrics.prom", "sglang")
    assert parsed.gauges == {
        "requests_running": 162,
        "requests_waiting": 2826,
        "kv_cache_usage": 0.28,
    }


def test_sglang_docs_scrape_histograms_count_every_request(scrape):
    parsed = scrape("sglang-docs-production_metrics.prom", "sglang")
    assert sum(parsed.histogram("ttft_seconds").counts) == 11008
    assert sum(parsed.histogram("e2e_seconds").counts) == 11228


def test_sglang_docs_scrape_per_chunk_time_per_token_is_not_taken_for_tpot(scrape):
    # 7,400,757 observations for 11,008 requests: a running mean per chunk, not per request.
    parsed = scrape("sglang-docs-production_metrics.prom", "sglang")
    assert (parsed.histogram("tpot_seconds"), parsed.histogram("itl_seconds")) == (None, None)


def test_sglang_of_that_release_exposes_no_request_counter(scrape):
    parsed = scrape("sglang-docs-production_metrics.prom", "sglang")
    assert parsed.counter_total("requests_finished") is None


# SGLang 0.3's docs scrape (gemma-2-9b-it, 2,104 requests): the scheduler gauges and the queue
# histogram under the names 0.4 replaced.
SGLANG_03 = "sglang-0.3-docs-gemma-production_metrics.prom"


# SGLang 0.5.23's own metric classes run through its tokenizer manager's calls (SOURCES.md):
# 6 requests streamed to their end, 1 stream abandoned after 5 tokens, 1 request abandoned while
# queued, 2 refused with a 503 (queue full), 1 health probe answered 503; priority scheduling on.
SGLANG_0523 = "written-here-sglang-0.5.23-aborts-errors-priority.prom"
# The same collectors before any request: families declared, no sample yet.
SGLANG_0523_START = "written-here-sglang-0.5.23-before-any-request.prom"


def test_sglang_0523_requests_refused_with_a_503_are_errors(scrape):
    assert scrape(SGLANG_0523, "sglang").counter_total("request_errors") == 2


def test_sglang_0523_per_request_tpot_is_read_for_requests_that_ran_to_their_end(scrape):
    assert sum(scrape(SGLANG_0523, "sglang").histogram("tpot_seconds").counts) == 6


def test_sglang_0523_counts_the_requests_it_retracted_for_kv_room_as_preemptions(scrape):
    # Two decode steps without KV room retracted 2, then 1 running request; the scheduler's
    # gauge beside the counter holds only the last step's 1.
    window = scrape_window(scrape(SGLANG_0523_START, "sglang"), scrape(SGLANG_0523, "sglang"), 30)
    assert window.counters["preemptions"] == 3


def test_sglang_0523_priority_breakdown_is_not_added_to_the_total(scrape):
    gauges = scrape(SGLANG_0523, "sglang").gauges
    assert (gauges["requests_running"], gauges["requests_waiting"]) == (3, 4)


def test_sglang_03_running_and_waiting_gauges_are_read(scrape):
    assert scrape(SGLANG_03, "sglang").gauges == {
        "requests_running": 0,
        "requests_waiting": 0,
        "kv_cache_usage": 0.01,
    }


def test_sglang_03_queue_time_median_lies_in_its_bucket(scrape):
    # Cumulative 900 at 5 s and 1,270 at 10 s: the 1,052nd of 2,104 requests waited 5-10 s.
    p50 = quantile(scrape(SGLANG_03, "sglang").histogram("queue_seconds"), 0.5)
    assert (p50.count, p50.lower, p50.upper) == (2104, 5.0, 10.0)


def test_triton_trtllm_readme_scrape(scrape):
    parsed = scrape("triton-trtllm-readme.prom", "triton")
    assert parsed.counter_total("requests_finished") == 0
    assert parsed.counter_total("request_errors") == 0
    # Triton's queue in front of tensorrt_llm is empty (0): waiting is the executor's own.
    assert parsed.gauges == {
        "requests_running": 1,
        "requests_waiting": 1,
        "kv_cache_usage": 0.4875,
    }


def test_triton_trtllm_017_readme_scrape_reads_kv_usage_from_its_block_counts(scrape):
    # Backend 0.17's README: 1 block used of 6,239, no `fraction` series yet.
    parsed = scrape("triton-trtllm-0.17-readme.prom", "triton")
    assert parsed.gauges["kv_cache_usage"] == pytest.approx(1 / 6239)


def test_triton_ensemble_waiting_counts_the_queues_of_the_models_it_calls(scrape):
    # The ensemble's own pending count is 0 whatever waits (it executes once passed on):
    # 2 queued for preprocessing and 1 for tensorrt_llm wait beside the executor's 8.
    parsed = scrape("written-here-triton-trtllm-0.19-ensemble-queues.prom", "triton")
    assert (parsed.gauges["requests_waiting"], parsed.gauges["requests_running"]) == (11, 32)


def test_triton_ensemble_scrape_counts_each_request_once(scrape):
    # 59 requests reached the ensemble; preprocessing and postprocessing counted them again.
    parsed = scrape("triton-23.10-trtllm-ensemble-issue.prom", "triton")
    assert parsed.counter_total("requests_finished") == 59


def test_triton_scrape_of_two_independent_models_adds_them(scrape):
    parsed = scrape("triton-24.08-failure-reasons-issue.prom", "triton")
    assert parsed.counter_total("requests_finished") == 40


def test_triton_failure_reasons_scrape_reads_errors_and_aborts_apart(scrape):
    parsed = scrape("triton-24.08-failure-reasons-issue.prom", "triton")
    assert (parsed.counter_total("request_errors"), parsed.counter_total("request_aborts")) == (
        0,
        0,
    )


def test_dcgm_mig_scrape_reads_the_whole_gpu_not_an_instance(scrape):
    gpus = scrape("dcgm-exporter-2.4-mig-docs.prom", "dcgm").gpus
    assert [(g["index"], g["dram_active"]) for g in gpus] == [(0, 0.690789)]


def test_dcgm_3x_mig_scrape_reads_each_gpus_power_from_its_instances_rows(scrape):
    # dcgm-exporter 3.x labels every row of a MIG GPU with an instance, the device's power on
    # each: GPU 0 reads 52.636, 52.636, 52.746, 52.746 W on instances 3-6, GPU 1 56.121, 56.127.
    gpus = scrape("dcgm-exporter-3.x-a30-mig-issue.prom", "dcgm").gpus
    assert [(g["index"], round(g["power_w"], 3)) for g in gpus] == [(0, 52.691), (1, 56.124)]


def test_dcgm_3x_mig_scrape_has_no_utilization_for_a_gpu_only_its_slices_report(scrape):
    gpus = scrape("dcgm-exporter-3.x-a30-mig-issue.prom", "dcgm").gpus
    assert {(g["util"], g["mem_used_bytes"]) for g in gpus} == {(None, None)}


def test_dcgm_exporter_readme_scrape(scrape):
    gpus = scrape("dcgm-exporter-readme.prom", "dcgm").gpus
    assert [(g["index"], g["uuid"], g["sm_clock_mhz"]) for g in gpus] == [
        (0, "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52", 139.0)
    ]


def test_ray_serve_scrape_reads_vllms_metrics_under_rays_prefix(scrape):
    # Ray Serve 2.32 exports vLLM's metrics as `ray_vllm:...`, with its own labels beside.
    parsed = scrape("ray-serve-2.32-vllm-datadog-excerpt.prom", "vllm")
    assert [parsed.counter_total(n) for n in ("requests_finished", "prompt_tokens")] == [1, 58]
    assert (parsed.histogram("itl_seconds").sum, parsed.histogram("e2e_seconds").sum) == (
        16.178537607192993,
        16.44955015182495,
    )


TRTLLM_SERVE = "written-here-trtllm-serve-bare-names.prom"


def prefixed(text: str, prefix: str) -> str:
    """Every metric name of an exposition with `prefix` in front."""
    return re.sub(r"(?m)^(# (?:HELP|TYPE) )?(?=[a-z])", lambda m: (m[1] or "") + prefix, text)


@pytest.mark.parametrize("prefix", ["", "trtllm_", "trtllm:"])
def test_trtllm_serve_reads_its_names_bare_prefixed_or_as_dynamo_exports_them(fixtures_dir, prefix):
    text = prefixed((fixtures_dir / "real" / "metrics" / TRTLLM_SERVE).read_text(), prefix)
    parsed = parse(text, "trtllm")
    assert f"\n{prefix}e2e_request_latency_seconds_count{{" in text
    assert parsed.counter_total("requests_finished") == 9
    assert sum(parsed.histogram("e2e_seconds").counts) == 9


def test_trtllm_serve_cancelled_requests_are_aborts_not_finished(scrape):
    parsed = scrape(TRTLLM_SERVE, "trtllm")
    assert (parsed.counter_total("requests_finished"), parsed.counter_total("request_aborts")) == (
        9,
        1,
    )


def test_trtllm_serve_time_per_output_token_is_a_per_request_tpot(scrape):
    parsed = scrape(TRTLLM_SERVE, "trtllm")
    assert (sum(parsed.histogram("tpot_seconds").counts), parsed.histogram("itl_seconds")) == (
        9,
        None,
    )


# `written_here_vllm_registration.py`: vLLM 0.34.0's PrometheusStatLogger as registered, byte
# for byte what 0.32.0's writes the same way.
VLLM_034_REGISTERED = "written-here-vllm-0.34.0-at-registration.prom"
PROMETHEUS_TYPE = {"counter": "counter", "gauge": "gauge"}


def test_vllm_034_registers_every_metric_perfhub_reads_under_its_name_and_type(fixtures_dir):
    text = (fixtures_dir / "real" / "metrics" / VLLM_034_REGISTERED).read_text()
    types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.MULTILINE))
    for rule in VLLM:
        name = rule.names[0]  # the newest name, under `vllm:`
        kind = PROMETHEUS_TYPE.get(rule.kind, "histogram")
        family = f"{name}_total" if kind == "counter" else name
        assert types.get(family) == kind, (rule.canonical, family)


def test_vllm_032_queue_full_rejections_are_errors(scrape):
    # --max-num-queued-reqs 10: 60 requests at concurrency 8 finished, then 10 of 80 at
    # concurrency 20, and 70 were refused (503) or cut off with the queue full.
    parsed = scrape("e2e-vllm-0.32.0-cpu-queue-full-rejections.prom", "vllm")
    assert (parsed.counter_total("request_errors"), parsed.counter_total("requests_finished")) == (
        70,
        70,
    )


def test_vllm_v0_successes_leave_out_aborted_requests(scrape):
    parsed = scrape("written-here-vllm-v0-0.6.prom", "vllm")
    assert parsed.counter_total("requests_finished") == 250 + 40
    assert parsed.counter_total("request_errors") is None


def test_vllm_v0_old_names_feed_kv_cache_and_itl(scrape):
    parsed = scrape("written-here-vllm-v0-0.6.prom", "vllm")
    assert parsed.gauges["kv_cache_usage"] == 0.41
    assert sum(parsed.histogram("itl_seconds").counts) == 59710


def test_vllm_v1_successes_leave_out_aborted_and_errored_requests(scrape):
    parsed = scrape("written-here-vllm-v1-aborts-errors.prom", "vllm")
    assert parsed.counter_total("requests_finished") == 90 + 7


def test_vllm_v1_errored_requests_are_errors(scrape):
    parsed = scrape("written-here-vllm-v1-aborts-errors.prom", "vllm")
    assert parsed.counter_total("request_errors") == 2


# vLLM 0.32.0 (CPU build) before and after `vllm bench serve` sent it 400 requests of 128
# prompt tokens and 32 output tokens (`make e2e-vllm`; SOURCES.md).
E2E_BEFORE, E2E_AFTER = "e2e-vllm-0.32.0-cpu-before.prom", "e2e-vllm-0.32.0-cpu-after.prom"


def test_vllm_032_counts_every_benchmark_request_and_token(scrape):
    parsed = scrape(E2E_AFTER, "vllm")
    assert parsed.counter_total("requests_finished") == 400  # all finished_reason="length"
    assert parsed.counter_total("request_errors") == 0
    assert parsed.counter_total("prompt_tokens") == 51243
    assert parsed.counter_total("generation_tokens") == 12800


def test_vllm_032_histograms_count_requests_and_token_gaps(scrape):
    parsed = scrape(E2E_AFTER, "vllm")
    assert sum(parsed.histogram("ttft_seconds").counts) == 400
    assert sum(parsed.histogram("e2e_seconds").counts) == 400
    assert sum(parsed.histogram("itl_seconds").counts) == 400 * 31  # gaps, not requests


def test_vllm_032_idle_engine_gauges(scrape):
    parsed = scrape(E2E_AFTER, "vllm")
    assert parsed.gauges == {"requests_running": 0, "requests_waiting": 0, "kv_cache_usage": 0}


def test_vllm_032_scrape_before_the_benchmark_counts_nothing(scrape):
    parsed = scrape(E2E_BEFORE, "vllm")
    assert parsed.counter_total("requests_finished") == 0
    assert sum(parsed.histogram("ttft_seconds").counts) == 0


# vLLM 0.32.0 (CPU build) with room for 24 KV blocks of 32 tokens, `--max-num-seqs 8`:
# `vllm bench serve` sent 48 requests of 128 + 128 tokens at concurrency 16 (SOURCES.md).
PREEMPT_BEFORE = "e2e-vllm-0.32.0-cpu-preemptions-before.prom"
PREEMPT_AFTER = "e2e-vllm-0.32.0-cpu-preemptions-after.prom"
# The same server: 60 benchmark requests (128 + 32 tokens) and 8 streams whose client hung up
# after 3 chunks; 3 of those ran to their end anyway, 5 were dropped (SOURCES.md).
CUT_BEFORE = "e2e-vllm-0.32.0-cpu-disconnects-before.prom"
CUT_AFTER = "e2e-vllm-0.32.0-cpu-disconnects-after.prom"


def test_vllm_032_counts_the_requests_it_preempted_for_kv_room(scrape):
    before, after = scrape(PREEMPT_BEFORE, "vllm"), scrape(PREEMPT_AFTER, "vllm")
    window = scrape_window(before, after, 26.6)
    assert (window.counters["preemptions"], window.counters["requests_finished"]) == (34, 48)


def test_vllm_032_per_request_token_histograms_count_finished_requests_alone(scrape):
    # The token counters grew by 3,946 output and 8,493 prompt tokens: the dropped streams' too.
    window = scrape_window(scrape(CUT_BEFORE, "vllm"), scrape(CUT_AFTER, "vllm"), 161.0)
    assert window.counters["finished_requests_counted"] == 63
    assert window.counters["finished_generation_tokens"] == 60 * 32 + 3 * 411
    assert window.counters["finished_prompt_tokens"] == 7988


# Written here from the TensorRT-LLM backend 0.19's own source (SOURCES.md): 8 requests through
# an ensemble, 4 streamed, 4 not (one without exclude_input_in_output, its input ids returned
# with the output and taken off again; one failed in the executor, 400 input tokens, no output).
TRITON_TOKENS = "written-here-triton-trtllm-0.19-token-histograms.prom"


def test_triton_trtllm_token_totals_come_from_the_backends_length_histograms(scrape):
    parsed = scrape(TRITON_TOKENS, "triton")
    assert (parsed.counter_total("prompt_tokens"), parsed.counter_total("generation_tokens")) == (
        3013,
        1915,
    )


def test_triton_trtllm_histograms_count_the_failed_request_the_success_counter_leaves_out(scrape):
    parsed = scrape(TRITON_TOKENS, "triton")
    assert (
        parsed.counter_total("finished_requests_counted"),
        parsed.counter_total("requests_finished"),
    ) == (8, 7)


def test_triton_trtllm_token_histograms_are_not_read_once_a_batched_request_was_served(scrape):
    # The same 8 requests and a ninth of batch size 2 (380 input, 350 output tokens), observed
    # once with its last row's 180 and 250: per request the sums would read too little.
    parsed = scrape("written-here-triton-trtllm-0.19-token-histograms-batched.prom", "triton")
    assert [
        parsed.counter_total(name)
        for name in ("prompt_tokens", "finished_requests_counted", "finished_generation_tokens")
    ] == [None, None, None]


# TGI's router, scraped for DataDog's integration tests (SOURCES.md): 111 requests, 109 done,
# 2 refused by validation; no TTFT histogram in this TGI.
TGI = "tgi-datadog-payload-excerpt.prom"


def test_tgi_counts_successes_and_not_the_requests_validation_refused(scrape):
    # tgi_request_failure{err="validation"} 2: the client's bad requests, not service errors.
    parsed = scrape(TGI, "tgi")
    assert parsed.counter_total("requests_finished") == 109
    assert parsed.counter_total("request_errors") is None  # no series a service error counts in


def test_tgi_token_totals_come_from_the_length_histograms_sums(scrape):
    parsed = scrape(TGI, "tgi")
    assert parsed.counter_total("prompt_tokens") == 662
    assert parsed.counter_total("generation_tokens") == 3423


def test_tgi_latency_histograms_count_every_finished_request(scrape):
    parsed = scrape(TGI, "tgi")
    counts = {m: sum(parsed.histogram(m).counts) for m in ("e2e_seconds", "queue_seconds")}
    assert counts == {"e2e_seconds": 109, "queue_seconds": 109}


def test_tgi_e2e_p99_lies_in_the_bucket_its_counts_put_it(scrape):
    # Cumulative counts 104 at 12.78 s and 108 at 19.18 s: the 108th of 109 requests.
    p99 = quantile(scrape(TGI, "tgi").histogram("e2e_seconds"), 0.99)
    assert (round(p99.lower, 2), round(p99.upper, 2)) == (12.78, 19.18)


def test_tgi_per_request_mean_time_per_token_is_tpot(scrape):
    # 100 of 109 requests between 65.7 and 98.5 ms a token.
    p50 = quantile(scrape(TGI, "tgi").histogram("tpot_seconds"), 0.5)
    assert (round(p50.lower * 1000, 1), round(p50.upper * 1000, 1)) == (65.7, 98.5)


def test_tgi_scrape_has_no_ttft_and_no_invalid_lines(scrape):
    parsed = scrape(TGI, "tgi")
    assert (parsed.histogram("ttft_seconds"), parsed.invalid) == (None, 0)


def test_tgi_idle_router_gauges(scrape):
    assert scrape(TGI, "tgi").gauges == {"requests_running": 0, "requests_waiting": 0}


def test_tgi_token_histograms_are_read_with_their_own_counts(scrape):
    # Here both observed the 109 successes (the 2 refused prompts were never observed): 6.07
    # prompt and 31.4 output tokens per request.
    parsed = scrape(TGI, "tgi")
    assert [
        parsed.counter_total(name)
        for name in ("prompt_requests_counted", "finished_prompt_tokens",
                     "finished_requests_counted", "finished_generation_tokens")
    ] == [109, 662, 109, 3423]  # fmt: skip


# Written here from TGI 3.3.7's router source (SOURCES.md): 7 successes, one of them best_of=3,
# 2 streams dropped, 1 failed generation, 1 refused by validation, 1 at the concurrency limit.
TGI_FAILURES = "written-here-tgi-3.3.7-failures-best-of.prom"


def test_tgi_prompt_histogram_counts_every_validated_sequence_not_the_successes(scrape):
    # 6 prompts of successes + 3 for the best_of=3 one + 2 dropped + 1 failed = 12; the
    # output histogram counts the 7 successes, as tgi_request_success does.
    parsed = scrape(TGI_FAILURES, "tgi")
    assert (
        parsed.counter_total("prompt_requests_counted"),
        parsed.counter_total("finished_requests_counted"),
        parsed.counter_total("requests_finished"),
    ) == (12, 7, 7)


@pytest.mark.parametrize(
    "name, readers",
    [
        ("ray-serve-2.32-vllm-datadog-excerpt.prom", ("vllm",)),
        (TRTLLM_SERVE, ("trtllm",)),
        ("dcgm-exporter-3.x-a30-mig-issue.prom", ("dcgm",)),
        ("tgi-datadog-payload-excerpt.prom", ("tgi",)),
    ],
)
def test_a_scrape_is_read_by_its_own_engines_mapping_alone(fixtures_dir, name, readers):
    assert sources_reading((fixtures_dir / "real" / "metrics" / name).read_text()) == readers
