"""An experiment's headline: the figure its hypothesis names, never a thin percentile."""

from analysis.cost import MetricDelta
from analysis.headline import choose, gate_too_few, target_metric, target_of, too_few_requests

# The demo's "Chunked prefill" (B4 -> B5): E2E P99 -9.4%, TTFT P99 -38.1%.
CHUNKED = [
    MetricDelta("qps", 24, 24),
    MetricDelta("e2e_p50_ms", 685, 721),
    MetricDelta("e2e_p90_ms", 900, 880),
    MetricDelta("e2e_p99_ms", 1600, 1450),
    MetricDelta("ttft_p99_ms", 420, 260),
]


def test_the_hypothesis_names_the_target_figure():
    hypothesis = "Splitting long prefills into chunks lets decode steps through, cutting TTFT P99."
    assert target_metric(hypothesis) == "ttft_p99_ms"


def test_a_figure_named_without_a_percentile_means_its_p99():
    assert target_metric("Lower TPOT for long answers") == "tpot_p99_ms"


def test_a_decimal_percentile_is_not_read_as_its_integer_part():
    assert target_metric("Cut E2E P99.9 under bursts") == "e2e_p999_ms"


def test_a_hypothesis_naming_no_latency_figure_has_no_target():
    assert target_metric("More tokens a second at the same load") is None


def test_the_headline_is_the_target_when_it_was_measured():
    h = choose(CHUNKED, target="ttft_p99_ms")
    assert (h.metric, h.targeted, h.replaces) == ("ttft_p99_ms", True, None)


def test_without_a_target_the_headline_is_e2e_p99_marked_as_the_default():
    h = choose(CHUNKED, target=None)
    assert (h.metric, h.targeted) == ("e2e_p99_ms", False)


def test_an_unjudgeable_percentile_falls_back_to_the_next_judgeable_one():
    h = choose(CHUNKED, target=None, unjudgeable={"e2e_p99_ms"})
    assert (h.metric, h.replaces, h.replaced_percentile) == ("e2e_p90_ms", "e2e_p99_ms", "P99")


def test_a_percentile_label_rules_out_that_percentile_of_every_figure():
    h = choose(CHUNKED, target="ttft_p99_ms", unjudgeable={"p99"})
    # TTFT has no judgeable lower percentile measured: the default's next figure that has one.
    assert (h.metric, h.targeted, h.replaces) == ("e2e_p90_ms", False, "ttft_p99_ms")


def test_a_stated_target_wins_over_the_figure_the_hypothesis_names():
    assert target_of("output_tps", "Cutting TTFT P99.") == ("output_tps", "stated")


def test_a_stated_target_not_measured_leaves_the_default_and_is_kept_on_the_headline():
    h = choose(CHUNKED, target="gpu_util", source="stated")
    assert (h.metric, h.targeted, h.target, h.target_unmeasured) == (
        "e2e_p99_ms",
        False,
        "gpu_util",
        True,
    )


def test_600_requests_a_side_are_too_few_for_p99_but_enough_for_p90():
    # The gate needs 10 requests beyond the quantile a side: 600 x 1% = 6.
    thin = too_few_requests(600, 600)
    assert "p99" in thin and "p90" not in thin


def test_the_gates_too_few_sentence_in_the_notes_is_read_back():
    notes = (
        "The release gate, 1 run before and 1 after, judged by the rows' thresholds alone: "
        "Worse: E2E P50 +163 ms (+28.6%). Too few requests to judge: E2E P99, TTFT P99, "
        "TPOT P99.\n\nBack to the default."
    )
    assert gate_too_few(notes) == {"e2e_p99_ms", "ttft_p99_ms", "tpot_p99_ms"}
