import math
import zlib

import numpy as np
import pytest
from ddsketch import DDSketch

from analysis import sketches
from analysis.percentiles import STANDARD_QUANTILES

HOSTS = 4
MINUTES = 60


def lognormal_latencies_ms(rng: np.random.Generator, n: int, median_ms: float) -> np.ndarray:
    """Request latencies shaped like an inference service's: log-normal with a long right tail."""
    return rng.lognormal(mean=math.log(median_ms), sigma=0.6, size=n)


@pytest.fixture
def per_host_minute() -> list[np.ndarray]:
    """Requests split across 4 hosts x 60 minutes; host 3 is busier and slower, as in the wild."""
    rng = np.random.default_rng(20240601)
    windows = []
    for host in range(HOSTS):
        for _minute in range(MINUTES):
            busy_and_slow = host == 3
            n = int(rng.poisson(120 if busy_and_slow else 40))
            windows.append(lognormal_latencies_ms(rng, n, 1800.0 if busy_and_slow else 900.0))
    return windows


def p99(sketch: DDSketch) -> float:
    return sketches.percentiles(sketch, [0.99])[0].value


def test_bucket_growth_is_the_prometheus_schema_5_factor():
    gamma = sketches.new_sketch()._mapping.gamma
    assert gamma == pytest.approx(2 ** (1 / 32), rel=1e-8)


def test_a_round_trip_gives_identical_quantiles():
    original = sketches.from_values(lognormal_latencies_ms(np.random.default_rng(1), 5000, 700))
    restored = sketches.loads(sketches.dumps(original))
    qs = [0.0, 0.01, *STANDARD_QUANTILES, 1.0]
    assert sketches.percentiles(restored, qs) == sketches.percentiles(original, qs)


def test_a_round_trip_keeps_count_sum_min_and_max():
    original = sketches.from_values([0.0, 12.5, 80.0, 80.0, 3000.25])
    restored = sketches.loads(sketches.dumps(original))
    assert sketches.summary(restored) == {"count": 5, "sum": 3172.75, "min": 0.0, "max": 3000.25}


def test_an_empty_sketch_survives_a_round_trip():
    restored = sketches.loads(sketches.dumps(sketches.new_sketch()))
    assert sketches.summary(restored) == {"count": 0, "sum": 0.0, "min": None, "max": None}


def test_merged_host_minute_sketches_give_the_p99_of_one_sketch_of_all_requests(per_host_minute):
    merged = sketches.merge(sketches.from_values(w) for w in per_host_minute)
    everything = sketches.from_values(np.concatenate(per_host_minute))
    assert p99(merged) == p99(everything)


def test_a_merged_p99_is_within_the_relative_accuracy_of_the_exact_p99(per_host_minute):
    # DDSketch returns the value at rank floor(q * (n - 1)), which is numpy's method="lower".
    # The guarantee is the relative accuracy, 1.083%: the design's "within 1%" budget rounds it,
    # and on this sample the error is 1.03%, so a strict 1% would be a false promise.
    merged = sketches.merge(sketches.from_values(w) for w in per_host_minute)
    exact = np.quantile(np.concatenate(per_host_minute), 0.99, method="lower")
    assert abs(p99(merged) - exact) / exact <= sketches.RELATIVE_ACCURACY


def test_a_merge_survives_serialization_of_every_window(per_host_minute):
    blobs = [sketches.dumps(sketches.from_values(w)) for w in per_host_minute]
    merged = sketches.merge(sketches.loads(b) for b in blobs)
    assert merged.count == sum(len(w) for w in per_host_minute)
    assert p99(merged) == p99(sketches.from_values(np.concatenate(per_host_minute)))


def test_merging_serialized_sketches_equals_merging_loaded_ones(per_host_minute):
    # Evaluation merges the stored blobs without a sketch object each: same bins and stats.
    windows = [*per_host_minute, np.array([]), np.array([0.0, 0.0, 5.0])]  # empty; zeros
    blobs = [sketches.dumps(sketches.from_values(w)) for w in windows]
    fast = sketches.merge_serialized(blobs)
    slow = sketches.merge(sketches.loads(b) for b in blobs)
    assert sketches.percentiles(fast) == sketches.percentiles(slow)
    assert sketches.summary(fast) == sketches.summary(slow)
    assert fast._zero_count == slow._zero_count == 2
    assert sketches.dumps(fast) == sketches.dumps(slow)


def test_merging_no_serialized_sketch_is_an_empty_sketch():
    assert sketches.merge_serialized([]).count == 0
    assert sketches.merge_serialized([sketches.dumps(sketches.new_sketch())]).count == 0


def test_merging_serialized_sketches_refuses_what_loads_refuses():
    raw = zlib.decompress(sketches.dumps(sketches.from_values([1.0, 2.0])))
    with pytest.raises(ValueError, match="truncated"):
        sketches.merge_serialized([sketches.dumps(sketches.from_values([3.0])),
                                   zlib.compress(raw[:-4])])  # fmt: skip


def test_a_merge_leaves_its_inputs_unchanged():
    a = sketches.from_values([10.0, 20.0])
    b = sketches.from_values([30.0])
    sketches.merge([a, b])
    assert (a.count, b.count) == (2, 1)


def test_merge_refuses_a_sketch_with_another_accuracy():
    foreign = DDSketch(relative_accuracy=0.01)
    foreign.add(5.0)
    with pytest.raises(ValueError, match=r"sketch 1 .*relative accuracy 0\.01"):
        sketches.merge([sketches.from_values([1.0]), foreign])


def test_an_empty_sketch_has_no_percentile_values_and_no_count():
    result = sketches.percentiles(sketches.new_sketch())
    assert [(p.value, p.count) for p in result] == [(None, 0)] * len(STANDARD_QUANTILES)


def test_a_merge_of_nothing_is_an_empty_sketch():
    assert sketches.merge([]).count == 0


def test_percentiles_say_how_they_were_made_and_on_how_many_requests():
    result = sketches.percentiles(sketches.from_values(range(1, 1001)), [0.99])[0]
    assert (result.method, result.count, result.label) == ("sketch", 1000, "p99")


def test_the_error_bound_holds_the_exact_quantile_within_the_relative_accuracy():
    values = lognormal_latencies_ms(np.random.default_rng(3), 20_000, 450)
    result = sketches.percentiles(sketches.from_values(values), [0.5, 0.99, 0.999])
    for p in result:
        exact = np.quantile(values, p.q, method="lower")
        assert p.lower <= exact <= p.upper
        # every value inside the bound is within the relative accuracy of the estimate
        for edge in (p.lower, p.upper):
            assert abs(p.value - edge) / edge <= sketches.RELATIVE_ACCURACY * (1 + 1e-9)


def test_a_quantile_never_leaves_the_observed_range():
    only = sketches.percentiles(sketches.from_values([123.0]), [0.5, 1.0])
    assert {(p.value, p.lower, p.upper) for p in only} == {(123.0, 123.0, 123.0)}


def test_ten_thousand_requests_serialize_under_two_kilobytes():
    values = lognormal_latencies_ms(np.random.default_rng(4), 10_000, 800)
    assert len(sketches.dumps(sketches.from_values(values))) < 2048


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_it_refuses_a_latency_that_cannot_be_one(bad):
    with pytest.raises(ValueError, match=r"values\[1\]"):
        sketches.from_values([1.0, bad])


def test_loads_refuses_bytes_that_are_not_a_sketch():
    with pytest.raises(ValueError, match="not zlib-compressed"):
        sketches.loads(b"definitely not a sketch")


def test_loads_refuses_a_truncated_sketch():
    raw = zlib.decompress(sketches.dumps(sketches.from_values([1.0, 2.0, 3.0])))
    with pytest.raises(ValueError, match="truncated"):
        sketches.loads(zlib.compress(raw[:-4]))


def test_share_at_most_a_limit_reads_the_sketch_cdf():
    from analysis.sketches import from_values, share_at_most

    sketch = from_values(range(1, 101))  # 1..100 ms
    assert share_at_most(sketch, 50) == pytest.approx(0.50, abs=0.02)
