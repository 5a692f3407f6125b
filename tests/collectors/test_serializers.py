"""The request list's two validation paths agree: whatever msgspec accepts (the hot path),
DRF accepts unchanged; whatever DRF refuses, msgspec leaves to DRF (which names the field)."""

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.decoding import fast_path
from collectors.serializers import (
    GpuSampleSerializer,
    RequestSampleSerializer,
    ValidRequest,
    flatten_errors,
)
from collectors.services.ingest import _gpu_row
from tests.factories.batches import gpu_sample

NOW = datetime(2025, 3, 3, 12, 0, tzinfo=UTC)
FULL = {
    "ts": "2025-03-03T11:59:00.250Z",
    "service": "chat-7b",
    "ttft_ms": 120,
    "tpot_ms": 21.5,
    "e2e_ms": 1000.0,
    "queue_ms": None,
    "prompt_tokens": 500,
    "output_tokens": 200,
    "ok": False,
}


def drf(item) -> ValidRequest | None:
    serializer = RequestSampleSerializer(data=item, context={"now": NOW})
    return serializer.validated_data if serializer.is_valid() else None


def fast(item) -> ValidRequest | None:
    result = fast_path(json.dumps({"requests": [item]}).encode(), NOW)
    return None if result is None else result[2][0]


GPU = gpu_sample("2025-03-03T11:59:00Z", name="NVIDIA H100")


def gpu_row(item: dict) -> tuple:
    return _gpu_row(1, item)


def drf_gpu(item) -> tuple | None:
    serializer = GpuSampleSerializer(data=item, context={"now": NOW})
    return gpu_row(serializer.validated_data) if serializer.is_valid() else None


def fast_gpu(item) -> tuple | None:
    result = fast_path(json.dumps({"gpus": [item]}).encode(), NOW)
    return None if result is None else gpu_row(result[1][0])


@pytest.mark.parametrize(
    "item",
    [FULL, {"ts": "2025-03-03T11:59:00+02:00", "service": "s", "e2e_ms": 0}],
)
def test_the_fast_path_gives_what_drf_gives(item):
    assert fast(item) == drf(item)
    assert fast(item) is not None


def test_both_paths_read_lowercase_t_and_z():
    item = {**FULL, "ts": "2025-03-03t11:59:00z"}
    assert fast(item).ts == drf(item).ts == datetime(2025, 3, 3, 11, 59, tzinfo=UTC)


def test_both_paths_read_the_space_rfc_3339_allows_between_date_and_time():
    item = {**FULL, "ts": "2025-03-03 11:59:00Z"}
    assert fast(item).ts == drf(item).ts == datetime(2025, 3, 3, 11, 59, tzinfo=UTC)


def test_both_paths_round_digits_past_the_microsecond_alike():
    item = {**FULL, "ts": "2025-03-03T11:58:59.9999996Z"}
    assert fast(item).ts == drf(item).ts == datetime(2025, 3, 3, 11, 59, tzinfo=UTC)


def test_both_paths_store_timestamps_in_utc():
    item = {**FULL, "ts": "2025-03-02T16:00:00-19:00"}
    assert fast(item).ts == drf(item).ts == datetime(2025, 3, 3, 11, 0, tzinfo=UTC)
    assert fast(item).ts.tzinfo is UTC


@pytest.mark.parametrize(
    "change",
    [
        {"e2e_ms": "1000"},
        {"e2e_ms": True},
        {"e2e_ms": None},
        {"ttft_ms": -1},
        {"prompt_tokens": 1.0},
        {"prompt_tokens": "5"},
        {"service": ""},
        {"service": "chat\u00007b"},
        {"service": "chat\u001b7b"},
        {"ts": "2025-03-03T11:59:00"},
        {"ts": "2025-03-03T11:59Z"},  # ISO 8601 but not RFC 3339: no seconds
        {"ts": "2025-03-03T11:59:00+05"},  # nor an offset without its minutes
        {"ts": "20250303T115900Z"},
        {"ts": "2025-03-03T12:30:00Z"},
        {"ts": "0001-01-01T00:00:00+05:00"},
        {"ok": "yes"},
        {"ok": 1},
    ],
)
def test_what_drf_refuses_the_fast_path_leaves_to_drf(change):
    item = {**FULL, **change}
    assert drf(item) is None
    assert fast(item) is None


values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=60),
    st.sampled_from(["2025-03-03T11:59:00Z", "2025-03-03T02:59:00-09:00", "chat-7b", "1e3"]),
    st.lists(st.integers(), max_size=2),
)
fields = st.sampled_from(list(FULL))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(fields, values, max_size=4), st.lists(fields, max_size=3))
def test_the_fast_path_accepts_only_what_drf_accepts_unchanged(changes, removed):
    item = {k: v for k, v in {**FULL, **changes}.items() if k not in removed}
    accepted = fast(item)
    if accepted is not None:
        assert accepted == drf(item)


@pytest.mark.parametrize("change", [{}, {"temp_c": -5.5, "util": 0}, {"uuid": "", "name": ""}])
def test_the_fast_path_stores_the_gpu_row_drf_would(change):
    assert fast_gpu({**GPU, **change}) == drf_gpu({**GPU, **change}) is not None


gpu_fields = st.sampled_from(list(GPU))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(gpu_fields, values, max_size=4), st.lists(gpu_fields, max_size=3))
def test_the_fast_path_accepts_only_gpu_samples_drf_accepts_unchanged(changes, removed):
    item = {k: v for k, v in {**GPU, **changes}.items() if k not in removed}
    accepted = fast_gpu(item)
    if accepted is not None:
        assert accepted == drf_gpu(item)


def test_errors_flatten_to_field_paths():
    nested = {"requests": {2: {"e2e_ms": ["bad"]}}, "gpus": [{}, {"util": ["x"]}], "host": ["h"]}
    assert flatten_errors(nested) == {
        "requests[2].e2e_ms": ["bad"],
        "gpus[1].util": ["x"],
        "host": ["h"],
    }
