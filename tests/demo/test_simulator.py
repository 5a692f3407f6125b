import statistics
from datetime import datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

from collectors.exposition.scrape import parse
from demo.engine_profile import EngineProfile
from demo.simulator import Simulator
from tests.collectors.agent.contract import GPU, REQUEST
from tests.support import StepClock

LABELS = (("engine", "0"), ("model_name", "meta-llama/Llama-3.1-8B-Instruct"))


def simulator(clock: StepClock, **kwargs) -> Simulator:
    return Simulator(host="demo-gpu-01", services=["chat-7b"], seed=7, clock=clock, **kwargs)


def samples(text: str) -> dict[tuple, float]:
    """{(sample name, sorted labels): value} via prometheus_client's parser."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def shape(text: str) -> dict[str, tuple[str, tuple]]:
    """{family: (type, label sets of its samples)}: names, labels and bucket edges, no values."""
    return {
        family.name: (
            family.type,
            tuple(sorted(tuple(sorted(s.labels.items())) for s in family.samples)),
        )
        for family in text_string_to_metric_families(text)
    }


def test_its_vllm_page_has_the_fixtures_names_labels_and_buckets(vllm_text):
    clock = StepClock()
    _, [scrape], _ = simulator(clock).step()

    # The simulator writes vLLM 0.11+, which adds per-request TPOT, prefill and decode
    # histograms and a finished_reason="error" series to the fixture's (older) page: every
    # family of the fixture is there, with its names, labels and buckets.
    simulated = shape(scrape["exposition"])
    assert {
        name: (kind, tuple(s for s in labelsets if s in simulated[name][1]))
        for name, (kind, labelsets) in shape(vllm_text).items()
        if name in simulated and simulated[name][0] == kind
    } == shape(vllm_text)


def test_its_vllm_page_has_per_request_tpot_apart_from_itl():
    _, [scrape], _ = simulator(StepClock()).step()
    names = set(shape(scrape["exposition"]))
    assert {"vllm:request_time_per_output_token_seconds", "vllm:inter_token_latency_seconds"} <= (
        names
    )


def test_its_counters_and_histograms_only_grow():
    clock = StepClock()
    sim = simulator(clock)
    _, [first], _ = sim.step()
    clock.now += 15.0
    _, [second], _ = sim.step()

    a, b = samples(first["exposition"]), samples(second["exposition"])
    growing = [k for k in a if k[0].endswith(("_total", "_bucket", "_count", "_sum"))]
    assert growing
    assert all(b[k] >= a[k] for k in growing)
    count = ("vllm:e2e_request_latency_seconds_count", LABELS)
    assert b[count] > a[count]


def test_its_request_rows_agree_with_its_histogram_counts():
    clock = StepClock()
    sim = simulator(clock)
    _, [scrape], requests = sim.step()

    ok = [r for r in requests if r["ok"]]
    values = samples(scrape["exposition"])
    assert values[("vllm:e2e_request_latency_seconds_count", LABELS)] == len(ok)
    e2e_sum_ms = values[("vllm:e2e_request_latency_seconds_sum", LABELS)] * 1000
    assert e2e_sum_ms == pytest.approx(sum(r["e2e_ms"] for r in ok), rel=1e-6)


def test_its_rows_follow_the_contract():
    clock = StepClock()
    gpus, _, requests = simulator(clock, gpus=2).step()

    assert len(gpus) == 2 and requests
    assert all(set(g) == set(GPU) for g in gpus)
    assert all(set(r) == set(REQUEST) for r in requests)
    for gpu in gpus:
        assert gpu["sm_active"] < gpu["util"]  # GPU-Util lies
        assert 0 < gpu["dram_active"] <= 1
        assert gpu["mem_used_bytes"] <= gpu["mem_total_bytes"]
    for r in requests:
        assert r["e2e_ms"] >= r["ttft_ms"] >= r["queue_ms"] >= 0


def test_a_slowdown_moves_the_p99_and_leaves_the_median_mostly_alone():
    clock = StepClock()
    sim = simulator(clock, qps=50.0, warmup_s=0.0)
    clock.now += 30.0
    before = [r["e2e_ms"] for r in sim.step()[2] if r["ok"]]
    sim.set_slowdown(4.0, share=0.1)
    clock.now += 30.0
    after = [r["e2e_ms"] for r in sim.step()[2] if r["ok"]]

    def p(values, q):
        return statistics.quantiles(values, n=100)[q - 1]

    # 1,500 requests a side: over seeds 0-5 the P99 moves 2.2-3.0x, the median 1.03-1.10x.
    assert p(after, 99) > 2.0 * p(before, 99)
    assert p(after, 50) < 1.3 * p(before, 50)


def test_a_planned_slowdown_starts_after_its_delay():
    clock = StepClock()
    sim = simulator(clock, slowdown_after=30.0, slowdown_factor=3.0, slowdown_share=0.2)
    clock.now += 10.0
    sim.step()
    assert not sim.engines[0].slowdown.active
    clock.now += 25.0
    sim.step()
    assert (sim.engines[0].slowdown.factor, sim.engines[0].slowdown.share) == (3.0, 0.2)


def test_it_samples_request_rows_down_to_the_per_batch_cap():
    clock = StepClock()
    sim = simulator(clock, qps=20.0, max_requests_per_batch=50)

    _, _, requests = sim.step()

    assert len(requests) == 50
    assert [r["ts"] for r in requests] == sorted(r["ts"] for r in requests)


def read(sim: Simulator, clock: StepClock, seconds: float):
    """The next scrape after `seconds`, as PerfHub's vLLM parser reads it."""
    clock.now += seconds
    _, [scrape], _ = sim.step()
    return parse(scrape["exposition"], "vllm")


def test_its_per_request_token_histograms_count_the_requests_and_tokens_its_counters_do():
    clock = StepClock()
    page = read(simulator(clock), clock, 60.0)
    counted = [page.counter_total(n) for n in (
        "finished_requests_counted", "finished_prompt_tokens", "finished_generation_tokens"
    )]  # fmt: skip
    assert counted == [page.counter_total(n) for n in (
        "requests_finished", "prompt_tokens", "generation_tokens"
    )]  # fmt: skip
    assert counted[0] > 0


def test_an_engine_with_kv_room_to_spare_preempts_nothing():
    clock = StepClock()
    assert read(simulator(clock), clock, 300.0).counter_total("preemptions") == 0


def test_an_engine_short_of_kv_room_preempts_its_profiles_share_of_requests():
    clock = StepClock()
    profile = EngineProfile(qps=20.0, swing=0.0, preemptions=0.03)
    sim = Simulator(host="demo-gpu-01", services=["rag"], profiles={"rag": profile}, seed=7,
                    clock=clock)  # fmt: skip
    page = read(sim, clock, 300.0)
    share = page.counter_total("preemptions") / page.counter_total("finished_requests_counted")
    assert share == pytest.approx(0.03, abs=0.01)


def test_an_engine_started_where_a_history_ends_finishes_nothing_before_it():
    # run_demo's agents: a request dated in the last seeded minute would have the roll-up
    # rewrite that minute from the few live requests.
    clock = StepClock()
    sim = simulator(clock, start_at=clock.now + 30)
    clock.now += 20
    assert sim.step()[2] == []
    clock.now += 15  # 5 s past the start
    requests = sim.step()[2]
    finished = [datetime.fromisoformat(r["ts"]).timestamp() for r in requests]
    assert finished and min(finished) >= clock.now - 5
