from datetime import UTC, datetime

import pytest

from collectors.serializers import RequestSampleSerializer, flatten_errors

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


def full_path(item: dict) -> dict:
    serializer = RequestSampleSerializer(data=item, context={"now": NOW})
    assert serializer.is_valid(), serializer.errors
    return dict(serializer.validated_data)


@pytest.mark.parametrize(
    "item",
    [FULL, {"ts": "2025-03-03T11:59:00+02:00", "service": "s", "e2e_ms": 0}],
)
def test_the_fast_path_gives_what_drf_gives(item):
    assert RequestSampleSerializer.fast_validate(item, NOW) == full_path(item)


@pytest.mark.parametrize(
    "change",
    [
        {"e2e_ms": "1000"},  # a string: DRF decides (and refuses)
        {"e2e_ms": True},
        {"ttft_ms": float("nan")},
        {"ttft_ms": -1},
        {"prompt_tokens": 1.0},
        {"service": " chat-7b"},
        {"ts": "2025-03-03T11:59:00"},
        {"ts": "2025-03-03T12:30:00Z"},
        {"ok": "yes"},
    ],
)
def test_the_fast_path_leaves_doubtful_items_to_drf(change):
    assert RequestSampleSerializer.fast_validate({**FULL, **change}, NOW) is None


def test_errors_flatten_to_field_paths():
    nested = {"requests": {2: {"e2e_ms": ["bad"]}}, "gpus": [{}, {"util": ["x"]}], "host": ["h"]}
    assert flatten_errors(nested) == {
        "requests[2].e2e_ms": ["bad"],
        "gpus[1].util": ["x"],
        "host": ["h"],
    }
