"""A batch's request samples as the rows COPY stores (REQUEST_FIELDS order)."""

from __future__ import annotations

from datetime import UTC, datetime

from collectors.samples import ValidRequest
from collectors.services.ingest import REQUEST_FIELDS, _request_rows

TS = datetime(2026, 12, 2, 13, 0, tzinfo=UTC)


def _sample(service: str, e2e_ms: float) -> ValidRequest:
    return ValidRequest(service=service, ts=TS, ttft_ms=None, e2e_ms=e2e_ms, prompt_tokens=5)


def _by_field(row: tuple) -> dict:
    return dict(zip(REQUEST_FIELDS, row, strict=True))


def test_a_one_service_batch_has_every_field_in_place():
    (row,) = _request_rows([_sample("chat", 120.0)], {"chat": 7}, 3)
    assert _by_field(row) == {
        "service_id": 7, "host_id": 3, "ts": TS, "ttft_ms": None, "tpot_ms": None,
        "e2e_ms": 120.0, "queue_ms": None, "prompt_tokens": 5, "output_tokens": None, "ok": True,
    }  # fmt: skip


def test_each_sample_of_a_mixed_batch_keeps_its_own_service():
    rows = _request_rows([_sample("chat", 1.0), _sample("rag", 2.0)], {"chat": 7, "rag": 9}, 3)
    assert [(r[0], r[5]) for r in rows] == [(7, 1.0), (9, 2.0)]
