"""AIPerf's per-request records: bad lines refused naming the line (the real files:
test_real_corpus.py)."""

import json

import pytest

from loadtests.formats import LoadTestFormatError, parse_loadtest


def record(**metadata):
    meta = {
        "request_start_ns": 1_796_315_036_000_000_000,
        "request_end_ns": 1_796_315_036_500_000_000,
    }
    meta.update(metadata)
    return {
        "metadata": meta,
        "metrics": {
            "request_latency": {"value": 500.0, "unit": "ms"},
            "time_to_first_token": {"value": 50.0, "unit": "ms"},
        },
    }


def parse(*records):
    return parse_loadtest("\n".join(json.dumps(r) for r in records))


def test_a_request_that_ends_before_it_starts_is_refused_naming_its_line():
    bad = record(request_end_ns=1_796_315_035_000_000_000)
    with pytest.raises(LoadTestFormatError, match=r"line 2: metadata.request_end_ns: .*before"):
        parse(record(), bad)


def test_a_latency_in_an_unknown_unit_is_refused_naming_the_metric():
    bad = record()
    bad["metrics"]["request_latency"]["unit"] = "furlongs"
    with pytest.raises(
        LoadTestFormatError, match=r"metrics.request_latency.unit: expected a time unit"
    ):
        parse(bad)


def test_latencies_in_nanoseconds_are_read_as_milliseconds():
    line = record()
    line["metrics"]["request_latency"] = {"value": 500_000_000, "unit": "ns"}
    (run,) = parse(*[line] * 50)
    assert run.fields["e2e_p50_ms"] == pytest.approx(500.0, rel=0.01)  # DDSketch, ±1%


def test_only_warmup_lines_is_refused_saying_so():
    with pytest.raises(LoadTestFormatError, match="lines skipped as warm-up: 1"):
        parse(record(benchmark_phase="warmup"))
