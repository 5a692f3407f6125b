"""The ingest fast path (collectors.decoding, msgspec) and the DRF serializers judge every body
alike: whenever the fast path takes a body, the serializer alone accepts it too, with the same
values, and rejects what the fast path rejects. Bodies are fuzzed field by field around the
contract's edges (docs/contracts.md)."""

import json
from datetime import timedelta

import pytest
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.exceptions import ValidationError

from collectors.decoding import fast_path, validate_body, validate_document
from collectors.serializers import GpuSampleSerializer
from tests.factories.batches import make_batch, rfc3339

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)
EDGY_NUMBERS = st.one_of(
    st.sampled_from([0, -1e-9, 1.7976931348623157e308, 10**400]),
    st.floats(min_value=0, max_value=1e6),
    st.floats(min_value=-1e3, max_value=-1e-9),
    st.integers(min_value=-3, max_value=2**64),
    st.sampled_from([0, 0.0, 1e308, -0.0, True, False, "1.5", "", None, [], {}]),
)
# Each edge strategy leads with the values just inside and just outside its bound.
RATIOS = st.one_of(
    st.sampled_from([0, 1, 1.0000001, 1.5, -1e-9, 0.5]),
    st.floats(min_value=-0.5, max_value=1.5),
    EDGY_NUMBERS,
)
COUNTS = st.one_of(
    st.sampled_from([0, -1, 2**62, 2**62 + 1, 2.0, 1.5]), st.integers(min_value=-3, max_value=2**63)
)
TIMESTAMPS = st.one_of(
    st.integers(min_value=-7200, max_value=7200).map(
        lambda s: rfc3339(NOW - timedelta(minutes=1, seconds=s))
    ),
    st.sampled_from(
        [
            (NOW - timedelta(minutes=1)).isoformat(),  # +00:00, not Z
            (NOW - timedelta(minutes=1)).replace(tzinfo=None).isoformat(),  # no zone
            rfc3339(NOW - timedelta(minutes=1)).replace("Z", "z"),
            rfc3339(NOW - timedelta(days=400)),
            "2026-13-01T00:00:00Z",
            "yesterday",
            "",
            1700000000,
            None,
        ]
    ),
)
NAMES = st.sampled_from(["chat-7b", "", "x" * 51, "chat\x07", "unknown-svc", 7, None])
GPU_NAMES = st.sampled_from(["", "NVIDIA H100", "x" * 101, "gpu\x00", 3])


DROP = object()  # a mutation that leaves the key out
VALID_TS = rfc3339(NOW - timedelta(minutes=1))

# Per field: what it may hold at the edges of the contract (DROP: left out).
REQUEST_EDGES = {
    "ts": TIMESTAMPS,
    "service": NAMES,
    "e2e_ms": EDGY_NUMBERS,
    "ttft_ms": EDGY_NUMBERS,
    "tpot_ms": EDGY_NUMBERS,
    "queue_ms": EDGY_NUMBERS,
    "prompt_tokens": COUNTS,
    "output_tokens": COUNTS,
    "ok": st.sampled_from([True, False, 1, "true", None]),
}
GPU_EDGES = {
    "ts": TIMESTAMPS,
    "index": st.one_of(st.integers(-2, 1100), st.sampled_from([1.0, "0", None])),
    "uuid": GPU_NAMES,
    "name": GPU_NAMES,
    "util": RATIOS,
    "mem_util": RATIOS,
    "sm_active": RATIOS,
    "sm_occupancy": RATIOS,
    "dram_active": RATIOS,
    "mem_used_bytes": COUNTS,
    "mem_total_bytes": COUNTS,
    "power_w": EDGY_NUMBERS,
    "sm_clock_mhz": EDGY_NUMBERS,
    "temp_c": st.one_of(st.floats(-150, 300), EDGY_NUMBERS),
}
VALID_REQUEST_ROW = {"ts": VALID_TS, "service": "chat-7b", "e2e_ms": 1000.0, "ttft_ms": 80.0,
                     "output_tokens": 200}  # fmt: skip
VALID_GPU_ROW = {"ts": VALID_TS, "index": 0, "uuid": "GPU-1", "util": 0.9, "temp_c": 60}


def mutated(valid: dict, edges: dict):
    """`valid` with up to three fields replaced by an edge value or left out: one field at a
    time is what finds a rule the two paths word differently."""
    mutation = st.sampled_from(sorted(edges)).flatmap(
        lambda key: st.tuples(st.just(key), st.one_of(edges[key], st.just(DROP)))
    )

    def apply(changes):
        row = dict(valid)
        for key, value in changes:
            if value is DROP:
                row.pop(key, None)
            else:
                row[key] = value
        return row

    return st.lists(mutation, max_size=3).map(apply)


REQUEST = mutated(VALID_REQUEST_ROW, REQUEST_EDGES)
GPU = mutated(VALID_GPU_ROW, GPU_EDGES)


def _ttft_within(row: dict) -> dict:
    """A request's TTFT is part of its end-to-end time (a plausibility rule of ingest)."""
    if row["ttft_ms"] is not None:
        row["ttft_ms"] = min(row["ttft_ms"], row["e2e_ms"])
    return row


VALID_REQUEST = st.fixed_dictionaries(
    {
        "ts": st.integers(0, 600).map(lambda s: rfc3339(NOW - timedelta(seconds=60 + s))),
        "service": st.just("chat-7b"),
        "e2e_ms": st.floats(0, 1e6),
        "ttft_ms": st.one_of(st.none(), st.floats(0, 1e5)),
        "output_tokens": st.one_of(st.none(), st.integers(0, 10**6)),
        "ok": st.booleans(),
    }
).map(_ttft_within)


GPU_FIELDS = tuple(GpuSampleSerializer().fields)


def outcome(judge, raw: bytes, host):
    """("accepted", the values ingest stores) or ("rejected",). A GPU field left out is stored
    as NULL (ingest reads them with .get), so absent and None are the same value."""
    try:
        data = judge(raw, host)
    except ValidationError:
        return ("rejected",)
    gpus = [{name: g.get(name) for name in GPU_FIELDS} for g in data["gpus"]]
    return ("accepted", {**data, "gpus": gpus})


def by_fast_path(raw, host):
    return validate_body(raw, host=host, now=NOW)


def by_serializer(raw, host):
    return validate_document(json.loads(raw), {"host": host, "now": NOW})


def body(requests, gpus) -> bytes:
    return json.dumps(
        make_batch(ts=NOW - timedelta(minutes=1), requests=requests, gpus=gpus)
    ).encode()


FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FUZZ
@given(requests=st.lists(REQUEST, max_size=3), gpus=st.lists(GPU, max_size=2))
def test_a_fuzzed_body_gets_the_same_verdict_and_values_both_ways(host, service, requests, gpus):
    raw = body(requests, gpus)
    assert outcome(by_fast_path, raw, host) == outcome(by_serializer, raw, host)


@FUZZ
@given(requests=st.lists(VALID_REQUEST, min_size=1, max_size=5))
def test_a_valid_body_takes_the_fast_path_with_the_serializers_values(host, service, requests):
    raw = body(requests, [])
    assert fast_path(raw, NOW) is not None  # else the test above could pass by always deferring
    assert outcome(by_fast_path, raw, host) == outcome(by_serializer, raw, host)


def test_an_integer_past_a_doubles_range_is_a_400_naming_the_field(agent_client, service):
    # Found by the fuzz above: the serializer's float() raised OverflowError (a 500).
    raw = body([dict(VALID_REQUEST_ROW, e2e_ms=10**400)], []).decode()
    response = agent_client.post("/api/v1/ingest/", raw, content_type="application/json")
    assert response.status_code == 400
    assert "requests[0].e2e_ms" in response.json()
