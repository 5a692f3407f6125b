"""Per-request arrays become stored statistics in one place (loadtests.formats.per_request)."""

import numpy as np
import pytest

from loadtests.formats import LoadTestFormatError, ParsedRun, finish
from loadtests.formats.base import empty_fields


def run_with(samples, **fields):
    return ParsedRun(
        format="toy",
        tool_version=None,
        label="toy",
        measured_at=None,
        fields={**empty_fields(), "request_count": 500, "duration_s": 10.0, **fields},
        samples=samples,
    )


def test_a_format_with_only_arrays_gets_its_percentiles_from_them():
    values = list(np.random.default_rng(1).lognormal(4, 0.5, 500))
    run = finish(run_with({"e2e": values}))
    assert run.fields["e2e_p99_ms"] == pytest.approx(np.quantile(values, 0.99), rel=0.02)


def test_a_percentile_the_samples_are_too_few_for_stays_missing():
    run = finish(run_with({"e2e": [100.0] * 500}))
    assert (run.fields["e2e_p99_ms"], run.fields["e2e_p999_ms"]) == (100.0, None)


def test_a_filled_percentile_says_where_it_came_from():
    run = finish(run_with({"ttft": [10.0] * 100}))
    assert run.sources["ttft_p50_ms"] == "p50 of 100 per-request ttft samples (DDSketch, ±1%)"


def test_percentiles_the_tool_wrote_stand_and_its_gaps_stay_gaps():
    run = finish(run_with({"e2e": [100.0] * 500}, e2e_p99_ms=250.0))
    assert (run.fields["e2e_p99_ms"], run.fields["e2e_p50_ms"]) == (250.0, None)


def test_a_negative_sample_is_refused_naming_family_and_index():
    with pytest.raises(LoadTestFormatError, match=r"e2e samples: values\[1\]"):
        finish(run_with({"e2e": [1.0, -2.0]}))
