"""Simulator profiles (latencies and traffic scaled to targets) and slowdowns that end."""

import statistics
from dataclasses import replace
from datetime import datetime

import pytest

from demo.engine_profile import EngineProfile, ProfileError
from demo.simulator import Simulator
from tests.support import CHAT_7B_PROFILE, StepClock

CHAT = replace(CHAT_7B_PROFILE, qps=40.0, e2e_p99_ms=1600)


def simulator(clock: StepClock, profile: EngineProfile = CHAT, **kwargs) -> Simulator:
    return Simulator(
        host="demo-gpu-01",
        services=["chat-7b"],
        profiles={"chat-7b": profile},
        seed=11,
        clock=clock,
        warmup_s=0.0,
        **kwargs,
    )


def quantile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=1000)[round(q * 1000) - 1]


def ok_rows(sim: Simulator, clock: StepClock, seconds: float) -> list[dict]:
    clock.now += seconds
    return [r for r in sim.step()[2] if r["ok"]]


@pytest.fixture
def chat_rows() -> list[dict]:
    """About 4,800 requests of the chat profile (two simulated minutes)."""
    clock = StepClock()
    return ok_rows(simulator(clock), clock, 120.0)


def test_a_profile_puts_the_ttft_median_on_its_target(chat_rows):
    assert quantile([r["ttft_ms"] for r in chat_rows], 0.5) == pytest.approx(85, rel=0.08)


def test_a_profile_puts_the_tpot_median_on_its_target(chat_rows):
    assert quantile([r["tpot_ms"] for r in chat_rows], 0.5) == pytest.approx(12.5, rel=0.06)


def test_a_profile_puts_the_e2e_median_where_ttft_and_tpot_imply(chat_rows):
    implied = CHAT.e2e_p50_ms  # 85 + 47 x 12.5
    assert quantile([r["e2e_ms"] for r in chat_rows], 0.5) == pytest.approx(implied, rel=0.08)


def test_a_profile_puts_each_p99_near_its_target(chat_rows):
    for metric, target in (("ttft", 400), ("tpot", 21), ("e2e", 1600)):
        p99 = quantile([r[f"{metric}_ms"] for r in chat_rows], 0.99)
        assert p99 == pytest.approx(target, rel=0.2), metric


def test_a_profile_sets_the_request_rate_the_daily_drift_moves_around():
    clock = StepClock()
    sim = simulator(clock, EngineProfile(qps=5.0))
    start = clock.now

    rows = ok_rows(sim, clock, 180.0)

    drifted = sim.engines[0].qps_at(start + 90.0)  # 5 req/s at this time of day
    assert sim.engines[0].base_qps == 5.0
    assert len(rows) / 180.0 == pytest.approx(drifted, rel=0.15)


def test_a_profile_scales_up_too():
    """The same code serves a long-answer service: Mixtral translation, ~17 s per request."""
    clock = StepClock()
    translate = EngineProfile(
        qps=3.0, ttft_p50_ms=420, tpot_p50_ms=24, output_tokens=700, e2e_p99_ms=24000
    )
    rows = ok_rows(simulator(clock, translate), clock, 300.0)

    e2e = [r["e2e_ms"] for r in rows]
    assert quantile(e2e, 0.5) == pytest.approx(translate.e2e_p50_ms, rel=0.08)
    assert quantile(e2e, 0.99) < 24000 * 1.1


def test_services_without_a_profile_keep_the_default_shape():
    clock = StepClock()
    sim = Simulator(
        host="h", services=["a", "b"], profiles={"a": CHAT}, seed=3, clock=clock, warmup_s=0.0
    )
    clock.now += 60.0
    rows = sim.step()[2]

    b_ttft = [r["ttft_ms"] for r in rows if r["service"] == "b"]
    assert quantile(b_ttft, 0.5) == pytest.approx(EngineProfile().ttft_p50_ms, rel=0.1)


def test_it_refuses_a_profile_for_a_service_it_does_not_simulate():
    with pytest.raises(ValueError, match="not simulated here: other"):
        Simulator(host="h", services=["chat-7b"], profiles={"other": CHAT})


def test_a_profile_round_trips_through_its_spec():
    assert EngineProfile.parse(CHAT.spec()) == CHAT


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("ttft=85", "expected KEY=VALUE with KEY one of qps, ttft_p50_ms"),
        ("ttft_p50_ms=fast", "ttft_p50_ms: expected a number, got 'fast'"),
        ("qps=nan", "qps: expected a finite number"),
        ("qps=0", "qps: must be more than 0"),
        ("ttft_p50_ms=100,ttft_p99_ms=90", "ttft_p99_ms: must be above ttft_p50_ms (100)"),
        ("tpot_p50_ms=20,output_tokens=100,e2e_p99_ms=1000", "e2e_p99_ms: must be above"),
    ],
)
def test_a_bad_profile_is_refused_naming_the_key(text, message):
    with pytest.raises(ProfileError, match=message.replace("(", r"\(").replace(")", r"\)")):
        EngineProfile.parse(text)


def test_a_planned_slowdown_ends_after_its_duration():
    clock = StepClock()
    sim = simulator(clock, slowdown_after=30.0, slowdown_for=60.0)
    clock.now += 40.0
    sim.step()
    assert sim.slowdown.active
    clock.now += 60.0  # 100 s: past the end at 90 s
    sim.step()
    assert not sim.slowdown.active


def test_the_p99_comes_back_once_a_slowdown_ends():
    clock = StepClock()
    sim = simulator(clock, slowdown_after=60.0, slowdown_for=60.0)
    before = [r["e2e_ms"] for r in ok_rows(sim, clock, 60.0)]
    during = [r["e2e_ms"] for r in ok_rows(sim, clock, 60.0)]
    after = [r["e2e_ms"] for r in ok_rows(sim, clock, 60.0)]

    assert quantile(during, 0.99) > 2 * quantile(before, 0.99)
    assert quantile(after, 0.99) == pytest.approx(quantile(before, 0.99), rel=0.2)


def test_a_slowdown_slows_only_requests_finishing_inside_it_when_a_batch_spans_it():
    clock = StepClock()
    start = clock.now
    sim = simulator(clock, slowdown_after=30.0, slowdown_for=30.0, slowdown_share=1.0)

    rows = ok_rows(sim, clock, 90.0)  # one batch over 0-90 s; the slowdown is 30-60 s

    def inside(row: dict) -> bool:
        return 30 <= datetime.fromisoformat(row["ts"]).timestamp() - start < 60

    slow = [r["tpot_ms"] for r in rows if inside(r)]
    fast = [r["tpot_ms"] for r in rows if not inside(r)]
    assert slow and fast
    assert min(slow) > max(fast) / 2  # x4 on everyone inside: the ranges barely touch
    assert statistics.median(slow) == pytest.approx(4 * statistics.median(fast), rel=0.1)


def test_set_slowdown_with_a_duration_ends_too():
    clock = StepClock()
    sim = simulator(clock)
    sim.set_slowdown(4.0, share=0.1, duration=20.0)
    clock.now += 10.0
    sim.step()
    assert sim.slowdown.active
    clock.now += 15.0
    sim.step()
    assert not sim.slowdown.active


def test_a_profile_sends_its_mean_answer_length_not_its_median():
    clock = StepClock()
    rows = ok_rows(simulator(clock), clock, 120.0)
    assert statistics.fmean(r["output_tokens"] for r in rows) == pytest.approx(48, rel=0.03)


def test_a_profile_sends_its_mean_prompt_length_not_its_median(chat_rows):
    assert statistics.fmean(r["prompt_tokens"] for r in chat_rows) == pytest.approx(350, rel=0.03)


def test_a_small_swing_keeps_the_rate_near_the_profile_all_day():
    steady = EngineProfile(qps=5.0, swing=0.04)
    sim = simulator(StepClock(), steady)
    day = [sim.engines[0].qps_at(1_700_000_000 + 600 * i) for i in range(144)]
    assert min(day) > 5.0 * 0.94 and max(day) < 5.0 * 1.06


def test_gpus_follow_a_profile_that_states_their_shares():
    clock = StepClock()
    sim = simulator(clock, EngineProfile(gpu_util=0.9, sm_active=0.6, swing=0.0))
    clock.now += 60.0
    gpus = sim.step()[0]
    util = statistics.fmean(g["util"] for g in gpus)
    sm = statistics.fmean(g["sm_active"] for g in gpus)
    assert (round(util, 1), round(sm, 1)) == (0.9, 0.6)


def test_an_end_to_end_p99_below_what_the_first_token_tail_allows_is_still_met():
    # Shaped like the demo's RAG service: TTFT P99 plus a typical decode exceeds the E2E P99.
    rag = EngineProfile(
        qps=6.0, ttft_p50_ms=530, ttft_p99_ms=2300, tpot_p50_ms=17.5, tpot_p99_ms=29,
        e2e_p99_ms=5100, prompt_tokens=5200, output_tokens=180,
    )  # fmt: skip
    clock = StepClock()
    rows = ok_rows(simulator(clock, rag), clock, 600.0)
    assert quantile([r["e2e_ms"] for r in rows], 0.99) == pytest.approx(5100, rel=0.1)
