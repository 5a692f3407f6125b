import json

import pytest

from analysis.knee import BREAKS_SLO, NOT_WORTH_IT, TAKEN, SweepPoint, sweet_spot


@pytest.fixture
def seed_sweep() -> list[SweepPoint]:
    """The seed's 13B batch sweep: 1 -> 16 gives 10x throughput for 1.9x latency in doubling
    steps (x1.78 throughput, x1.17 latency each); 16 -> 32 gives +20% for 2x latency."""
    points = [
        SweepPoint(x=2**i, throughput=100 * 10 ** (i / 4), p99_ms=400 * 1.9 ** (i / 4))
        for i in range(5)
    ]
    at_16 = points[-1]
    return [*points, SweepPoint(x=32, throughput=at_16.throughput * 1.2, p99_ms=at_16.p99_ms * 2)]


@pytest.fixture
def vllm_sweep(fixtures_dir) -> list[SweepPoint]:
    lines = (
        (fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl").read_text().splitlines()
    )
    runs = [json.loads(line) for line in lines if line.strip()]
    return [
        SweepPoint(r["max_concurrency"], r["output_throughput"], r["p99_e2el_ms"]) for r in runs
    ]


@pytest.fixture
def guidellm_sweep(fixtures_dir) -> list[SweepPoint]:
    report = json.loads((fixtures_dir / "loadtests" / "guidellm-sweep-benchmarks.json").read_text())
    points = []
    for benchmark in report["benchmarks"]:
        metrics = benchmark["metrics"]
        points.append(
            SweepPoint(
                x=benchmark["config"]["strategy"]["rate"],
                throughput=metrics["output_tokens_per_second"]["successful"]["mean"],
                p99_ms=metrics["request_latency"]["successful"]["percentiles"]["p99"] * 1000,
            )
        )
    return points


def test_it_names_16_on_the_seed_batch_sweep(seed_sweep):
    assert sweet_spot(seed_sweep).best.x == 16


def test_it_says_why_it_stopped_on_the_seed_batch_sweep(seed_sweep):
    assert sweet_spot(seed_sweep).reason == (
        "16 -> 32: throughput +20% for latency x2.00; elasticity 0.26 < 1"
    )


def test_it_takes_every_doubling_step_up_to_16_on_the_seed_sweep(seed_sweep):
    steps = sweet_spot(seed_sweep).steps
    assert [(s.end.x, s.verdict) for s in steps] == [
        (2, TAKEN),
        (4, TAKEN),
        (8, TAKEN),
        (16, TAKEN),
        (32, NOT_WORTH_IT),
    ]


def test_it_names_concurrency_16_on_the_vllm_sweep(vllm_sweep):
    # Up to 16 every doubling buys +58% to +88% output tokens/s for at most +25% P99 e2e
    # (elasticity 2 or more). 16 -> 32 buys +20% for +53% P99 (elasticity 0.43) and 32 -> 64
    # only +4% for x1.95: the server is saturated past 16.
    result = sweet_spot(vllm_sweep)
    assert (result.best.x, result.index) == (16, 4)


def test_it_names_rate_6_on_the_guidellm_sweep(guidellm_sweep):
    # Rates 1 -> 6 raise output tokens/s 5.5x while P99 latency stays at 5.1-5.6 s. At rate 6 the
    # server already delivers only 5.47 of the 6 requests/s offered: saturation begins. From there
    # each step costs more P99 than it adds throughput (6 -> 8: +21% for x1.23, elasticity 0.94;
    # 6 -> 12: +51% for x1.67), and P99 TTFT climbs from 222 ms to 708 ms.
    result = sweet_spot(guidellm_sweep)
    assert result.best.x == 6
    assert result.reason == "6 -> 8: throughput +21% for latency x1.23; elasticity 0.94 < 1"


def test_an_slo_tighter_than_a_points_p99_stops_the_walk_before_it(vllm_sweep):
    # P99 e2e at concurrency 8 is 7.6 s and at 16 is 9.5 s.
    result = sweet_spot(vllm_sweep, slo_p99_ms=8000)
    assert result.best.x == 8
    assert result.steps[-1].verdict == BREAKS_SLO
    assert (
        result.reason
        == "8 -> 16: throughput +58% for latency x1.25; P99 9,495 ms breaks the SLO of 8,000 ms"
    )


def test_a_loose_slo_does_not_move_the_knee(vllm_sweep):
    assert sweet_spot(vllm_sweep, slo_p99_ms=60_000).best.x == 16


def test_there_is_no_sweet_spot_when_even_the_first_point_breaks_the_slo(vllm_sweep):
    result = sweet_spot(vllm_sweep, slo_p99_ms=1000)
    assert (result.best, result.index) == (None, None)
    assert "even the lowest setting 1 breaks the SLO" in result.reason


def test_one_noisy_point_does_not_end_the_walk():
    points = [
        SweepPoint(1, 100, 400),
        SweepPoint(2, 190, 420),
        SweepPoint(4, 185, 410),  # a noisy run: no gain over 2
        SweepPoint(8, 360, 450),
        SweepPoint(16, 380, 900),
    ]
    result = sweet_spot(points)
    assert result.best.x == 8
    assert [(s.start.x, s.end.x, s.verdict) for s in result.steps[1:3]] == [
        (2, 4, NOT_WORTH_IT),
        (2, 8, TAKEN),
    ]


def test_points_may_come_in_any_order_and_index_refers_to_the_input(vllm_sweep):
    shuffled = vllm_sweep[::-1]
    result = sweet_spot(shuffled)
    assert (result.best.x, shuffled[result.index].x) == (16, 16)


def test_a_sweep_that_never_bends_names_its_last_point_and_says_so():
    points = [SweepPoint(1, 100, 100), SweepPoint(2, 200, 110), SweepPoint(4, 400, 120)]
    result = sweet_spot(points)
    assert result.best.x == 4
    assert "knee may lie beyond the sweep" in result.reason


def test_a_step_whose_p99_fell_says_so_rather_than_barely_moved():
    # Real low-load points often have the worst P99: a cold first request among few.
    result = sweet_spot([SweepPoint(1, 30, 380), SweepPoint(3, 99, 231), SweepPoint(6, 193, 227)])
    first, second = result.steps
    assert first.reason.endswith("latency fell")
    assert second.reason.endswith("latency barely moved")


def test_a_single_point_is_its_own_sweet_spot():
    result = sweet_spot([SweepPoint(8, 500, 1200)])
    assert (result.best.x, result.index, result.steps) == (8, 0, ())


def test_no_points_give_no_sweet_spot():
    assert sweet_spot([]).best is None


def test_a_step_that_gains_almost_nothing_is_not_worth_taking_even_for_free_latency():
    result = sweet_spot([SweepPoint(1, 1000, 500), SweepPoint(2, 1020, 500)])
    assert result.best.x == 1
    assert result.reason.endswith("gain below 5%")


def test_it_refuses_two_runs_at_the_same_setting():
    with pytest.raises(ValueError, match=r"points\[0\] and points\[1\] share x=4"):
        sweet_spot([SweepPoint(4, 100, 10), SweepPoint(4, 110, 11)])


def test_it_refuses_a_non_positive_p99():
    with pytest.raises(ValueError, match=r"points\[1\]\.p99_ms must be positive"):
        sweet_spot([SweepPoint(1, 100, 10), SweepPoint(2, 110, 0)])


def test_it_refuses_a_missing_throughput():
    with pytest.raises(ValueError, match=r"points\[0\]\.throughput must be a number"):
        sweet_spot([SweepPoint(1, None, 10)])
