"""Each engine's metric names land on the same canonical series."""

import pytest

from collectors.exposition import parse, sources, window
from collectors.exposition.engines import COUNTERS, ENGINES, GAUGES, HISTOGRAMS


def histogram(name: str, labels: str = "", les=("0.1", "1.0", "+Inf"), counts=(1, 2, 2)) -> str:
    sep = "," if labels else ""
    rows = [f"# TYPE {name} histogram"]
    rows += [
        f'{name}_bucket{{{labels}{sep}le="{le}"}} {c}' for le, c in zip(les, counts, strict=True)
    ]
    rows += [f"{name}_sum{{{labels}}} 0.5", f"{name}_count{{{labels}}} {counts[-1]}"]
    return "\n".join(rows) + "\n"


def test_every_scrape_source_is_an_engine_or_dcgm():
    assert set(sources()) == set(ENGINES) | {"dcgm"}


def test_every_rule_targets_a_canonical_series():
    canonical = set(COUNTERS) | set(HISTOGRAMS) | set(GAUGES)
    assert {rule.canonical for e in ENGINES.values() for rule in e.rules} <= canonical


# --- vLLM, old and new names -------------------------------------------------------------------


def test_old_vllm_time_per_output_token_maps_to_itl():
    scrape = parse(histogram("vllm:time_per_output_token_seconds"), "vllm")
    assert scrape.histogram("itl_seconds").count == 2


def test_vllm_per_request_tpot_histogram_is_tpot_not_itl():
    scrape = parse(histogram("vllm:request_time_per_output_token_seconds"), "vllm")
    assert (scrape.histogram("tpot_seconds").count, scrape.histogram("itl_seconds")) == (2, None)


def test_vllm_exposing_tpot_and_itl_keeps_both_apart():
    text = histogram("vllm:request_time_per_output_token_seconds", counts=(1, 2, 2)) + histogram(
        "vllm:inter_token_latency_seconds", counts=(40, 90, 99)
    )
    scrape = parse(text, "vllm")
    assert (scrape.histogram("tpot_seconds").count, scrape.histogram("itl_seconds").count) == (
        2,
        99,
    )


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("request_queue_time_seconds", "queue_seconds"),
        ("request_prefill_time_seconds", "prefill_seconds"),
        ("request_decode_time_seconds", "decode_seconds"),
    ],
)
def test_vllm_engine_side_layers_have_their_own_series(name, canonical):
    assert parse(histogram(f"vllm:{name}"), "vllm").histogram(canonical).count == 2


def test_vllm_aborted_requests_are_aborts():
    text = (
        'vllm:request_success_total{finished_reason="stop"} 7\n'
        'vllm:request_success_total{finished_reason="abort"} 3\n'
    )
    assert parse(text, "vllm").counter_total("request_aborts") == 3


def test_old_vllm_gpu_cache_usage_maps_to_kv_cache_usage():
    scrape = parse("vllm:gpu_cache_usage_perc 0.5\n", "vllm")
    assert scrape.gauges == {"kv_cache_usage": 0.5}


def test_old_and_new_vllm_names_give_the_same_series():
    old = parse(
        histogram("vllm:time_per_output_token_seconds", 'model_name="m"')
        + 'vllm:gpu_cache_usage_perc{model_name="m"} 0.5\n',
        "vllm",
    )
    new = parse(
        histogram("vllm:inter_token_latency_seconds", 'model_name="m"')
        + 'vllm:kv_cache_usage_perc{model_name="m"} 0.5\n',
        "vllm",
    )
    assert (old.histograms, old.gauges) == (new.histograms, new.gauges)


def test_when_vllm_exposes_both_names_the_newer_one_is_used_once():
    text = histogram("vllm:inter_token_latency_seconds", counts=(1, 2, 3)) + histogram(
        "vllm:time_per_output_token_seconds", counts=(1, 2, 3)
    )
    assert parse(text, "vllm").histogram("itl_seconds").count == 3


def test_vllm_gpu_cache_usage_is_ignored_when_kv_cache_usage_is_present():
    text = "vllm:kv_cache_usage_perc 0.25\nvllm:gpu_cache_usage_perc 0.75\n"
    assert parse(text, "vllm").gauges == {"kv_cache_usage": 0.25}


def test_vllm_successes_are_stop_and_length_not_abort_or_error():
    text = (
        "# TYPE vllm:request_success_total counter\n"
        'vllm:request_success_total{finished_reason="stop"} 7\n'
        'vllm:request_success_total{finished_reason="length"} 2\n'
        'vllm:request_success_total{finished_reason="abort"} 1\n'
        'vllm:request_success_total{finished_reason="error"} 3\n'
    )
    assert parse(text, "vllm").counter_total("requests_finished") == 9


def test_vllm_requests_finished_with_an_error_are_errors():
    text = (
        'vllm:request_success_total{finished_reason="stop"} 7\n'
        'vllm:request_success_total{finished_reason="error"} 3\n'
        'vllm:request_success_total{finished_reason="abort"} 1\n'
    )
    assert parse(text, "vllm").counter_total("request_errors") == 3


def test_vllm_running_requests_are_summed_over_engines():
    text = 'vllm:num_requests_running{engine="0"} 3\nvllm:num_requests_running{engine="1"} 4\n'
    assert parse(text, "vllm").gauges == {"requests_running": 7}


def test_kv_cache_usage_is_the_fullest_engine():
    text = 'vllm:kv_cache_usage_perc{engine="0"} 0.3\nvllm:kv_cache_usage_perc{engine="1"} 0.9\n'
    assert parse(text, "vllm").gauges == {"kv_cache_usage": 0.9}


def test_metrics_no_rule_maps_are_ignored_and_counted():
    text = "vllm:prefix_cache_queries_total 4\nprocess_cpu_seconds_total 12.5\n"
    scrape = parse(text, "vllm")
    assert (scrape.counters, scrape.ignored) == ({}, 2)


def test_an_engine_upgrade_between_scrapes_is_windowed_on_the_canonical_series():
    before = parse(histogram("vllm:time_per_output_token_seconds", counts=(1, 2, 2)), "vllm")
    after = parse(histogram("vllm:inter_token_latency_seconds", counts=(2, 4, 5)), "vllm")
    assert window(before, after, 1.0).histograms["itl_seconds"].count == 3


# --- SGLang ------------------------------------------------------------------------------------

SGLANG = (
    "# TYPE sglang:num_requests_total counter\n"
    'sglang:num_requests_total{model_name="m"} 40\n'
    "# TYPE sglang:prompt_tokens_total counter\n"
    'sglang:prompt_tokens_total{model_name="m",tp_rank="0"} 8000\n'
    'sglang:prompt_tokens_total{model_name="m",tp_rank="1"} 8000\n'
    "# TYPE sglang:generation_tokens_total counter\n"
    'sglang:generation_tokens_total{model_name="m",tp_rank="0"} 3000\n'
    'sglang:generation_tokens_total{model_name="m",tp_rank="1"} 3000\n'
    'sglang:num_running_reqs{model_name="m",tp_rank="0"} 6\n'
    'sglang:num_running_reqs{model_name="m",tp_rank="1"} 6\n'
    'sglang:num_queue_reqs{model_name="m",tp_rank="0"} 2\n'
    'sglang:token_usage{model_name="m",tp_rank="0"} 0.28\n'
    + histogram("sglang:time_to_first_token_seconds", 'model_name="m"')
    + histogram("sglang:inter_token_latency_seconds", 'model_name="m"')
    + histogram("sglang:e2e_request_latency_seconds", 'model_name="m"')
)


def test_sglang_counters_map_to_canonical_names():
    scrape = parse(SGLANG, "sglang")
    assert {n: scrape.counter_total(n) for n in ("requests_finished", "generation_tokens")} == {
        "requests_finished": 40,
        "generation_tokens": 3000,
    }


def test_sglang_series_repeated_per_tensor_parallel_rank_are_counted_once():
    assert parse(SGLANG, "sglang").counter_total("prompt_tokens") == 8000


def test_sglang_04_retractions_running_total_is_read_as_preemptions():
    # 0.4.10-0.5.1 keep the running total of retracted requests in a gauge, once per TP rank
    # with --enable-metrics-for-all-schedulers (metrics/collector.py: total_retracted_reqs).
    text = (
        "# TYPE sglang:total_retracted_reqs gauge\n"
        'sglang:total_retracted_reqs{model_name="m",tp_rank="0"} 12\n'
        'sglang:total_retracted_reqs{model_name="m",tp_rank="1"} 12\n'
    )
    assert parse(text, "sglang").counter_total("preemptions") == 12


def test_sglang_gauges_map_to_canonical_names():
    assert parse(SGLANG, "sglang").gauges == {
        "requests_running": 6,
        "requests_waiting": 2,
        "kv_cache_usage": 0.28,
    }


def test_sglang_histograms_map_to_canonical_names():
    assert set(parse(SGLANG, "sglang").histograms) == {
        ("ttft_seconds", (("model_name", "m"),)),
        ("itl_seconds", (("model_name", "m"),)),
        ("e2e_seconds", (("model_name", "m"),)),
    }


def test_sglang_running_mean_per_chunk_is_read_as_neither_tpot_nor_itl():
    scrape = parse(histogram("sglang:time_per_output_token_seconds"), "sglang")
    assert scrape.histograms == {}


def test_sglang_aborted_requests_are_aborts_not_errors():
    scrape = parse("sglang:num_aborted_requests_total 4\n", "sglang")
    assert (scrape.counter_total("request_aborts"), scrape.counter_total("request_errors")) == (
        4,
        None,
    )


def test_sglang_5xx_answers_of_health_probes_are_not_request_errors():
    scrape = parse(
        'sglang:http_responses_total{endpoint="/health",method="GET",status_code="503"} 5\n'
        'sglang:http_responses_total{endpoint="/v1/chat/completions",method="POST",'
        'status_code="500"} 2\n'
        'sglang:http_responses_total{endpoint="/v1/chat/completions",method="POST",'
        'status_code="400"} 7\n',
        "sglang",
    )
    assert scrape.counter_total("request_errors") == 2


# --- Triton ------------------------------------------------------------------------------------

TRITON = (
    "# TYPE nv_inference_request_success counter\n"
    'nv_inference_request_success{model="llm",version="1"} 120\n'
    "# TYPE nv_inference_request_failure counter\n"
    'nv_inference_request_failure{model="llm",reason="REJECTED",version="1"} 3\n'
    "# TYPE nv_inference_request_duration_us counter\n"
    'nv_inference_request_duration_us{model="llm",version="1"} 240000000\n'
    "# TYPE nv_inference_queue_duration_us counter\n"
    'nv_inference_queue_duration_us{model="llm",version="1"} 1200000\n'
    "# TYPE nv_inference_pending_request_count gauge\n"
    'nv_inference_pending_request_count{model="llm",version="1"} 5\n'
    "# TYPE nv_trt_llm_request_metrics gauge\n"
    'nv_trt_llm_request_metrics{model="llm",request_type="active",version="1"} 12\n'
    'nv_trt_llm_request_metrics{model="llm",request_type="scheduled",version="1"} 9\n'
    "# TYPE nv_trt_llm_kv_cache_block_metrics gauge\n"
    'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="used",model="llm",version="1"} 700\n'
    'nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction",model="llm",version="1"}'
    " 0.7\n"
    + histogram(
        "nv_inference_first_response_histogram_ms",
        'model="llm",version="1"',
        les=("100", "500", "+Inf"),
        counts=(30, 110, 120),
    )
)


def test_triton_counts_successes_and_failures():
    scrape = parse(TRITON, "triton")
    assert (scrape.counter_total("requests_finished"), scrape.counter_total("request_errors")) == (
        120,
        3,
    )


def test_triton_microsecond_duration_counters_become_seconds():
    scrape = parse(TRITON, "triton")
    assert (scrape.counter_total("e2e_seconds_sum"), scrape.counter_total("queue_seconds_sum")) == (
        pytest.approx(240.0),
        pytest.approx(1.2),
    )


def test_triton_millisecond_ttft_buckets_become_seconds():
    bc = parse(TRITON, "triton").histogram("ttft_seconds")
    assert (bc.edges, bc.sum) == ((0.1, 0.5), pytest.approx(0.0005))


def test_triton_gauges_read_only_the_labelled_trt_llm_series():
    # Waiting: 12 active less 9 scheduled in the executor, and 5 in Triton's queue.
    assert parse(TRITON, "triton").gauges == {
        "requests_running": 9,
        "requests_waiting": 8,
        "kv_cache_usage": 0.7,
    }


def test_triton_kv_usage_before_backend_018_is_used_over_max_blocks_of_the_fullest_model():
    # No `fraction` before TensorRT-LLM backend 0.18: the backend's own fraction is used / max.
    text = "".join(
        f'nv_trt_llm_kv_cache_block_metrics{{kv_cache_block_type="{kind}",model="{model}",'
        f'version="1"}} {value}\n'
        for model, used, free in (("draft", 100, 900), ("target", 3000, 1000))
        for kind, value in (("used", used), ("free", free), ("max", used + free))
    )
    assert parse(text, "triton").gauges["kv_cache_usage"] == 0.75


def test_triton_kv_usage_prefers_the_backends_fraction_to_its_block_counts():
    # TRITON's 700 used blocks over these 800 would read 0.875.
    max_blocks = 'kv_cache_block_type="max",model="llm",version="1"'
    text = TRITON + f"nv_trt_llm_kv_cache_block_metrics{{{max_blocks}}} 800\n"
    assert parse(text, "triton").gauges["kv_cache_usage"] == 0.7


def test_triton_waiting_adds_tritons_queue_to_the_executors_unscheduled_requests():
    # 5 requests in Triton's queue in front of the model, not yet handed to the backend, and
    # 3 in the executor not scheduled in its last iteration: 8 wait, none counted twice.
    text = TRITON + 'nv_trt_llm_request_metrics{model="llm",request_type="waiting",version="1"} 3\n'
    assert parse(text, "triton").gauges["requests_waiting"] == 8


def test_triton_waiting_before_backend_018_is_the_executors_active_less_scheduled():
    # What 0.18 exports as `waiting` (model_instance_state.cc WaitForStats), from the two
    # request types every backend since 0.9 exports.
    text = "".join(
        f'nv_trt_llm_request_metrics{{model="llm",request_type="{kind}",version="1"}} {n}\n'
        for kind, n in (("active", 40), ("scheduled", 32), ("context", 4), ("max", 256))
    )
    assert parse(text, "triton").gauges["requests_waiting"] == 8


def test_triton_postprocessing_queue_is_not_requests_waiting():
    # Each streamed chunk is a postprocessing request of a request already generating.
    text = (
        'nv_inference_pending_request_count{model="tensorrt_llm",version="1"} 1\n'
        'nv_inference_pending_request_count{model="postprocessing",version="1"} 4\n'
    )
    assert parse(text, "triton").gauges["requests_waiting"] == 1


def test_triton_canceled_requests_are_aborts_not_errors():
    text = (
        'nv_inference_request_failure{model="llm",reason="CANCELED",version="1"} 5\n'
        'nv_inference_request_failure{model="llm",reason="BACKEND",version="1"} 2\n'
        'nv_inference_request_failure{model="llm",reason="REJECTED",version="1"} 1\n'
    )
    scrape = parse(text, "triton")
    assert (scrape.counter_total("request_errors"), scrape.counter_total("request_aborts")) == (
        3,
        5,
    )


def test_triton_bls_model_is_read_alone_beside_the_models_it_calls():
    text = (
        'nv_inference_request_success{model="tensorrt_llm_bls",version="1"} 7\n'
        'nv_inference_request_success{model="tensorrt_llm",version="1"} 7\n'
        'nv_inference_request_duration_us{model="tensorrt_llm_bls",version="1"} 7000000\n'
        'nv_inference_request_duration_us{model="tensorrt_llm",version="1"} 6000000\n'
    )
    scrape = parse(text, "triton")
    assert (scrape.counter_total("requests_finished"), scrape.counter_total("e2e_seconds_sum")) == (
        7,
        pytest.approx(7.0),
    )


# --- TGI ---------------------------------------------------------------------------------------


def test_tgi_input_length_sum_gives_prompt_tokens():
    text = histogram("tgi_request_input_length", les=("100", "+Inf"), counts=(3, 4))
    assert parse(text, "tgi").counter_total("prompt_tokens") == 0.5


def test_tgi_per_request_mean_time_per_token_is_tpot_not_itl():
    scrape = parse(histogram("tgi_request_mean_time_per_token_duration"), "tgi")
    assert (scrape.histogram("tpot_seconds").count, scrape.histogram("itl_seconds")) == (2, None)


def test_tgi_requests_its_chat_template_refused_are_not_service_errors():
    # err="template": the chat template raised on the messages sent (HTTP 422, as validation).
    text = (
        "# TYPE tgi_request_failure counter\n"
        'tgi_request_failure{err="template"} 5\n'
        'tgi_request_failure{err="overloaded"} 2\n'
    )
    assert parse(text, "tgi").counter_total("request_errors") == 2


def test_tgi_clients_that_went_away_are_aborts_not_errors():
    text = (
        "# TYPE tgi_request_failure counter\n"
        'tgi_request_failure{err="dropped"} 4\n'
        'tgi_request_failure{err="cancelled"} 3\n'
        'tgi_request_failure{err="generation"} 2\n'
    )
    scrape = parse(text, "tgi")
    assert (scrape.counter_total("request_aborts"), scrape.counter_total("request_errors")) == (
        7,
        2,
    )
