import json

import pytest

from analysis.buckets import (
    BucketCounts,
    coarsen,
    merge,
    merge_all,
    quantile,
    quantiles,
    shared_edges,
)
from analysis.percentiles import STANDARD_QUANTILES

# 10 observations in (0, 1], 80 in (1, 2], 10 in (2, 4], none above 4.
HUNDRED = BucketCounts(edges=(1.0, 2.0, 4.0), counts=(10, 80, 10, 0), sum=170.0)


def test_it_interpolates_inside_the_bucket_like_histogram_quantile():
    # rank 50 is the 40th of 80 observations in (1, 2]
    assert quantile(HUNDRED, 0.5).value == pytest.approx(1.5)


def test_a_percentile_carries_its_bucket_edges_as_bounds():
    p = quantile(HUNDRED, 0.5)
    assert (p.lower, p.upper) == (1.0, 2.0)


def test_a_percentile_says_how_many_requests_it_rests_on():
    assert quantile(HUNDRED, 0.99).count == 100


def test_a_percentile_is_labelled_bucket_bounded():
    assert quantile(HUNDRED, 0.9).method == "bucket-bounded"


def test_a_percentile_inside_the_first_bucket_is_an_upper_bound_not_a_value():
    p = quantile(HUNDRED, 0.05)
    assert (p.value, p.below_first_edge, p.lower, p.upper) == (None, 1.0, 0.0, 1.0)


def test_a_percentile_inside_the_first_bucket_reads_as_below_its_edge():
    assert quantile(HUNDRED, 0.05).text("s", 1) == "< 1.0 s"


def test_a_quantile_on_a_bucket_edge_is_that_edge():
    assert quantile(HUNDRED, 0.9).value == pytest.approx(2.0)


def test_a_quantile_in_the_inf_bucket_has_no_value_only_the_last_edge():
    bc = BucketCounts(edges=(1.0, 2.0), counts=(50, 40, 10), sum=0.0)
    p = quantile(bc, 0.99)
    assert (p.value, p.above_last_edge, p.lower, p.upper) == (None, 2.0, 2.0, None)


def test_an_empty_histogram_gives_no_value_and_no_requests():
    p = quantile(BucketCounts.empty((1.0, 2.0)), 0.5)
    assert (p.value, p.count) == (None, 0)


def test_q_zero_is_the_lower_edge_of_the_first_nonempty_bucket():
    bc = BucketCounts(edges=(1.0, 2.0, 4.0), counts=(0, 5, 5, 0))
    assert quantile(bc, 0.0).value == 1.0


def test_a_q_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match="q"):
        quantile(HUNDRED, 99)


def test_quantiles_gives_the_standard_set_in_order():
    assert [p.q for p in quantiles(HUNDRED)] == list(STANDARD_QUANTILES)


def test_merging_adds_counts_and_sums():
    merged = merge(HUNDRED, HUNDRED)
    assert (merged.counts, merged.sum) == ((20, 160, 20, 0), 340.0)


def test_merging_counts_with_different_edges_is_refused():
    other = BucketCounts(edges=(1.0, 3.0, 4.0), counts=(1, 1, 1, 1))
    with pytest.raises(ValueError, match="different edges"):
        merge(HUNDRED, other)


def test_merge_all_of_nothing_is_none():
    assert merge_all([]) is None


def test_the_p99_of_a_merge_is_not_the_mean_of_p99s():
    fast = BucketCounts(edges=(1.0, 10.0), counts=(99, 1, 0))
    slow = BucketCounts(edges=(1.0, 10.0), counts=(50, 50, 0))
    merged_p99 = quantile(merge(fast, slow), 0.99).value
    mean_of_p99s = (quantile(fast, 0.99).bound + quantile(slow, 0.99).bound) / 2
    assert merged_p99 == pytest.approx(1 + 9 * 49 / 51) and mean_of_p99s == pytest.approx(5.41)


def test_coarsening_onto_shared_edges_keeps_the_cumulative_counts():
    coarse = coarsen(HUNDRED, (2.0,))
    assert (coarse.edges, coarse.counts, coarse.sum) == ((2.0,), (90, 10), 170.0)


def test_coarsening_onto_an_edge_it_does_not_have_is_refused():
    with pytest.raises(ValueError, match="not edges"):
        coarsen(HUNDRED, (3.0,))


def test_shared_edges_are_the_ones_every_layout_has():
    other = BucketCounts(edges=(2.0, 4.0, 8.0), counts=(0, 0, 0, 0))
    assert shared_edges([HUNDRED, other]) == (2.0, 4.0)


def test_it_round_trips_through_json():
    assert BucketCounts.from_dict(json.loads(json.dumps(HUNDRED.to_dict()))) == HUNDRED


def test_from_dict_names_the_missing_field():
    with pytest.raises(ValueError, match="counts"):
        BucketCounts.from_dict({"edges": [1.0]})


def test_counts_must_have_one_more_entry_than_edges():
    with pytest.raises(ValueError, match="counts"):
        BucketCounts(edges=(1.0, 2.0), counts=(1, 2))


def test_edges_must_increase():
    with pytest.raises(ValueError, match="increasing"):
        BucketCounts(edges=(2.0, 1.0), counts=(1, 2, 3))


def test_negative_counts_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        BucketCounts(edges=(1.0,), counts=(-1, 2))


def test_from_cumulative_takes_the_running_maximum_across_le():
    bc = BucketCounts.from_cumulative((1.0, 2.0, 4.0), (5, 3, 8, 8))
    assert bc.counts == (5, 0, 3, 0)


# vLLM's end-to-end edges around 5 s, and a P99 that interpolates to 8.33 s inside 5-10 s while
# the requests above 5 s may all be just above it (as the demo's RAG Answers: exact P99 5.4 s).
VLLM_E2E = BucketCounts(edges=(2.5, 5.0, 10.0, 15.0), counts=(100, 870, 30, 0, 0), sum=0.0)


def test_a_percentile_in_a_wide_bucket_says_its_bucket_before_its_estimate():
    assert quantile(VLLM_E2E, 0.99).text("s", 2) == "in 5.00 s\u201310.00 s, est. 8.33 s"


def test_the_api_form_of_a_percentile_says_it_lies_in_a_wide_bucket():
    assert quantile(VLLM_E2E, 0.99).to_dict()["wide_bucket"] is True


@pytest.mark.parametrize(
    ("target", "verdict"),
    [(6.0, "unsure"), (10.0, "met"), (12.0, "met"), (5.0, "missed"), (4.0, "missed")],
)
def test_an_slo_inside_the_p99s_bucket_is_neither_met_nor_missed(target, verdict):
    assert quantile(VLLM_E2E, 0.99).against(target) == verdict


def test_a_p99_beyond_the_last_edge_misses_an_slo_below_that_edge():
    bc = BucketCounts(edges=(1.0, 2.0), counts=(50, 40, 10), sum=0.0)
    assert (quantile(bc, 0.99).against(1.5), quantile(bc, 0.99).against(3.0)) == (
        "missed",
        "unsure",
    )


def test_a_bucket_one_and_a_half_times_its_lower_edge_is_not_wide_whatever_the_rounding():
    # TGI's duration edges are 0.0001 x 1.5^i: every bucket exactly 1.5x, each edge rounded.
    edges = tuple(0.0001 * 1.5**i for i in range(1, 36))
    wide = []
    for i in range(1, len(edges)):
        counts = [0.0] * (len(edges) + 1)
        counts[i] = 100.0
        wide.append(quantile(BucketCounts(edges, tuple(counts)), 0.5).wide_bucket)
    assert not any(wide)
