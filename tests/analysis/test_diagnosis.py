import pytest

from analysis import diagnosis
from analysis.diagnosis import Observation, diagnose

GB = 1e9


def _rules(obs: Observation) -> list[str]:
    return [p.rule for p in diagnose(obs)]


def _only(obs: Observation, rule: str) -> diagnosis.Proposal:
    proposals = [p for p in diagnose(obs) if p.rule == rule]
    assert len(proposals) == 1, _rules(obs)
    return proposals[0]


def test_layers_and_kinds_match_the_bottleneck_model_choices():
    from dossiers.models import Bottleneck

    assert set(Bottleneck.Layer.values) == diagnosis.LAYERS
    assert set(Bottleneck.Kind.values) == diagnosis.KINDS


def test_an_empty_observation_proposes_nothing():
    assert diagnose(Observation()) == []


def test_a_healthy_observation_proposes_nothing():
    obs = Observation(
        gpu_util=0.92,
        sm_active=0.75,
        dram_active=0.5,
        requests_waiting=0.2,
        requests_running=24,
        e2e_p50_ms=1800,
        e2e_p99_ms=3600,
        kv_cache_usage=0.6,
        oom_errors=0,
        sweep=[(1, 100), (4, 380), (16, 1000), (32, 1200)],
        latency_since_restart=[(1, 130), (3, 120), (10, 110), (20, 115), (30, 112)],
        memory_over_time=[(0, 40 * GB), (4, 40.1 * GB), (8, 39.9 * GB), (12, 40 * GB)],
    )
    assert diagnose(obs) == []


def test_every_proposal_uses_a_known_layer_and_kind():
    obs = Observation(
        gpu_util=0.95,
        sm_active=0.2,
        dram_active=0.1,
        e2e_p50_ms=100,
        e2e_p99_ms=900,
        kv_cache_usage=0.97,
        sweep=[(8, 1000), (16, 1020), (32, 1030)],
        latency_since_restart=[(1, 900), (10, 100), (15, 110), (20, 105)],
        memory_over_time=[(0, 40 * GB), (2, 42 * GB), (4, 44 * GB), (6, 46 * GB)],
    )
    proposals = diagnose(obs)
    assert len(proposals) == 6
    for p in proposals:
        assert p.layer in diagnosis.LAYERS
        assert p.kind in diagnosis.KINDS


# --- (a) GPU waiting ------------------------------------------------------------------------


def test_low_gpu_util_with_a_queue_longer_than_the_batch_proposes_small_batches():
    p = _only(Observation(gpu_util=0.3, requests_waiting=12, requests_running=4), "gpu_waiting")
    assert (p.layer, p.kind) == ("scheduling", "queueing")
    assert "30%" in p.evidence and "12 requests waiting" in p.evidence


def test_low_gpu_util_with_a_full_batch_waiting_proposes_the_cpu_side():
    p = _only(Observation(gpu_util=0.3, requests_waiting=3, requests_running=32), "gpu_waiting")
    assert (p.layer, p.kind) == ("scheduling", "cpu")


def test_low_gpu_util_with_no_queue_is_not_gpu_waiting():
    assert _rules(Observation(gpu_util=0.3, requests_waiting=0.1)) == []


def test_high_gpu_util_with_a_queue_is_not_gpu_waiting():
    assert _rules(Observation(gpu_util=0.9, requests_waiting=20)) == []


def test_gpu_waiting_needs_the_queue_length():
    assert _rules(Observation(gpu_util=0.1)) == []


# --- (b) long tail --------------------------------------------------------------------------


def test_p99_far_above_a_normal_p50_proposes_long_requests_blocking_short_ones():
    obs = Observation(e2e_p50_ms=800, e2e_p99_ms=6400, e2e_slo_ms=5000)
    p = _only(obs, "long_tail")
    assert (p.layer, p.kind) == ("scheduling", "queueing")
    assert "8.0x" in p.evidence and "6,400 ms" in p.evidence


def test_tail_evidence_reads_as_the_pages_print_latencies():
    # Merged percentiles carry float noise; "12345.6789" or "1.23457e+06" in evidence would not
    # read as the dossier's own "12,346 ms".
    obs = Observation(e2e_p50_ms=1234.5678, e2e_p99_ms=1234567.891, e2e_slo_ms=12000)
    assert _only(obs, "long_tail").evidence == (
        "e2e P99 1,234,568 ms is 1000.0x P50 1,235 ms (> 4x); P50 within the 12,000 ms SLO"
    )


def test_flat_throughput_evidence_separates_thousands():
    obs = Observation(sweep=[(512, 20480.25), (1024, 21000.5), (2048, 21200.75)])
    evidence = _only(obs, "throughput_flat").evidence
    assert evidence.startswith("batch/concurrency 512 -> 2,048 (4.0x): throughput 20,480 -> 21,201")


def test_a_tail_with_no_slo_given_still_counts():
    assert _rules(Observation(e2e_p50_ms=100, e2e_p99_ms=500)) == ["long_tail"]


def test_a_moderate_p99_to_p50_ratio_is_not_a_long_tail():
    assert _rules(Observation(e2e_p50_ms=800, e2e_p99_ms=2400)) == []


def test_a_slow_p50_is_not_a_tail_problem():
    assert _rules(Observation(e2e_p50_ms=6000, e2e_p99_ms=30000, e2e_slo_ms=5000)) == []


def test_long_tail_needs_both_percentiles():
    assert _rules(Observation(e2e_p99_ms=30000)) == []


# --- (c) busy GPU, idle SMs -----------------------------------------------------------------


def test_high_gpu_util_with_low_sm_active_and_busy_dram_proposes_memory_bound_hardware():
    p = _only(Observation(gpu_util=0.98, sm_active=0.3, dram_active=0.85), "busy_gpu_idle_sms")
    assert (p.layer, p.kind) == ("hardware", "memory_bandwidth")
    assert "98%" in p.evidence and "30%" in p.evidence and "85%" in p.evidence


def test_high_gpu_util_with_low_sm_active_and_idle_dram_proposes_launch_bound():
    p = _only(Observation(gpu_util=0.98, sm_active=0.3, dram_active=0.1), "busy_gpu_idle_sms")
    assert (p.layer, p.kind) == ("model", "cpu")


def test_without_dram_data_it_proposes_memory_or_launch_bound_model_execution():
    p = _only(Observation(gpu_util=0.98, sm_active=0.3), "busy_gpu_idle_sms")
    assert (p.layer, p.kind) == ("model", "memory_bandwidth")


def test_sm_active_close_to_gpu_util_is_not_flagged():
    assert _rules(Observation(gpu_util=0.95, sm_active=0.7)) == []


def test_busy_gpu_idle_sms_needs_sm_active():
    assert _rules(Observation(gpu_util=0.99)) == []


# --- (d) throughput flat --------------------------------------------------------------------


def test_throughput_flat_while_the_batch_grows_proposes_memory_bandwidth():
    obs = Observation(sweep=[(1, 100), (4, 390), (16, 1000), (32, 1030), (64, 1040)])
    p = _only(obs, "throughput_flat")
    assert (p.layer, p.kind) == ("hardware", "memory_bandwidth")
    assert "16 -> 64" in p.evidence and "1,000 -> 1,040" in p.evidence


def test_a_flat_sweep_with_idle_dram_points_at_the_batching_policy():
    obs = Observation(sweep=[(8, 1000), (16, 1010), (32, 1005)], dram_active=0.15)
    p = _only(obs, "throughput_flat")
    assert (p.layer, p.kind) == ("scheduling", "queueing")


def test_the_seed_sweep_with_diminishing_but_real_gains_is_not_flat():
    # Seed: batch 1 -> 16 gave ~10x throughput, 16 -> 32 gave +20%.
    assert _rules(Observation(sweep=[(1, 100), (16, 1000), (32, 1200)])) == []


def test_a_sweep_that_grows_again_at_the_end_is_not_flat():
    assert _rules(Observation(sweep=[(1, 100), (2, 102), (4, 300)])) == []


def test_a_single_point_is_not_a_sweep():
    assert _rules(Observation(sweep=[(16, 1000)])) == []


def test_a_sweep_with_two_points_at_the_same_batch_is_rejected():
    with pytest.raises(ValueError, match="sweep has two points at 16"):
        Observation(sweep=[(16, 1000), (16, 1100)])


# --- (e) memory capacity --------------------------------------------------------------------


def test_a_kv_cache_near_full_proposes_memory_capacity():
    p = _only(Observation(kv_cache_usage=0.96), "memory_capacity")
    assert (p.layer, p.kind) == ("framework", "memory_capacity")
    assert "96%" in p.evidence


def test_oom_errors_propose_memory_capacity():
    p = _only(Observation(oom_errors=3, kv_cache_usage=0.5), "memory_capacity")
    assert p.evidence == "3 out-of-memory errors"


def test_a_roomy_kv_cache_and_no_oom_is_fine():
    assert _rules(Observation(kv_cache_usage=0.85, oom_errors=0)) == []


def test_preemptions_propose_memory_capacity_with_the_gauge_roomy():
    p = _only(
        Observation(preemptions=3, finished_requests=200, kv_cache_usage=0.4), "memory_capacity"
    )
    assert p.evidence == "3 preemptions for KV-cache room (2% of 200 finished requests)"


def test_a_preemption_per_thousand_requests_is_not_a_kv_cache_too_small():
    assert _rules(Observation(preemptions=1, finished_requests=1000, kv_cache_usage=0.4)) == []


def test_preemptions_are_a_share_of_the_requests_where_the_engine_counted_them():
    # 1 in 1,000 over the service, but the 900 requests of hosts whose engine counts no
    # preemptions (TGI, say) cannot dilute it: 1 in 100 where they were counted.
    obs = Observation(preemptions=1, finished_requests=1000, finished_counting_preemptions=100)
    assert _only(obs, "memory_capacity").evidence == (
        "1 preemption for KV-cache room (1% of 100 finished requests counted; "
        "900 more finished where the engine does not count them)"
    )


# --- (f) cold start -------------------------------------------------------------------------


def test_high_latency_just_after_a_restart_proposes_a_missing_warm_up():
    obs = Observation(
        latency_since_restart=[(0.5, 2400), (2, 900), (4, 300), (10, 250), (15, 260), (20, 240)]
    )
    p = _only(obs, "cold_start")
    assert (p.layer, p.kind) == ("framework", "cpu")
    assert "2,400 ms" in p.evidence and "250 ms" in p.evidence


def test_a_short_blip_within_twice_the_steady_state_is_not_cold_start():
    obs = Observation(latency_since_restart=[(1, 400), (3, 260), (10, 250), (15, 260), (20, 240)])
    assert _rules(obs) == []


def test_cold_start_needs_a_steady_state_to_compare_with():
    obs = Observation(latency_since_restart=[(0.5, 2400), (2, 900), (4, 300), (10, 250)])
    assert _rules(obs) == []


def test_cold_start_needs_points_just_after_the_restart():
    obs = Observation(latency_since_restart=[(10, 900), (15, 250), (20, 240), (30, 245)])
    assert _rules(obs) == []


# --- (g) memory creep -----------------------------------------------------------------------


def test_memory_rising_steadily_over_hours_proposes_a_leak():
    points = [(h, (40 + 0.5 * h) * GB) for h in range(0, 13, 2)]
    p = _only(Observation(memory_over_time=points), "memory_creep")
    assert (p.layer, p.kind) == ("framework", "memory_capacity")
    assert "+0.50 GB/h" in p.evidence and "R² 1.00" in p.evidence
    assert "over 12 h:" in p.evidence  # whole hours read as such, not "12.0"


def test_noisy_memory_with_no_trend_is_not_a_leak():
    used = [40, 43, 39, 42, 40, 43, 39]
    obs = Observation(memory_over_time=[(h, u * GB) for h, u in enumerate(used)])
    assert _rules(obs) == []


def test_a_very_slow_rise_below_the_rate_threshold_is_not_a_leak():
    obs = Observation(memory_over_time=[(h, (40 + 0.01 * h) * GB) for h in range(12)])
    assert _rules(obs) == []


def test_falling_memory_is_not_a_leak():
    obs = Observation(memory_over_time=[(h, (40 - 0.5 * h) * GB) for h in range(12)])
    assert _rules(obs) == []


def test_a_test_too_short_to_find_a_leak_does_not_fire():
    obs = Observation(memory_over_time=[(m / 60, (40 + m) * GB) for m in range(0, 60, 10)])
    assert _rules(obs) == []


# --- validation -----------------------------------------------------------------------------


def test_it_rejects_a_utilization_given_in_percent_naming_the_field():
    with pytest.raises(ValueError, match="gpu_util must be a ratio between 0 and 1"):
        Observation(gpu_util=85)


def test_it_rejects_a_negative_queue_length():
    with pytest.raises(ValueError, match="requests_waiting"):
        Observation(requests_waiting=-1)


def test_it_rejects_a_series_point_that_is_not_a_pair_naming_its_index():
    with pytest.raises(ValueError, match=r"memory_over_time\[1\]"):
        Observation(memory_over_time=[(0, 1.0), (1,)])


def test_it_builds_an_observation_from_a_run_record_ignoring_other_fields():
    obs = Observation.from_mapping({"gpu_util": 0.4, "qps": 3.0, "e2e_p50_ms": 100.0})
    assert (obs.gpu_util, obs.e2e_p50_ms, obs.sm_active) == (0.4, 100.0, None)
