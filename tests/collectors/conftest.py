"""Fixtures for the collectors tests: a host, its token, an API client speaking as the agent,
and a builder for valid batches (DESIGN.md section 3)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from rest_framework.test import APIClient

from collectors.models import Host
from collectors.services.tokens import token_issue

INGEST_URL = "/api/v1/ingest/"


def rfc3339(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def recent_minute(minutes_ago: int = 5) -> datetime:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    return now - timedelta(minutes=minutes_ago)


def make_batch(*, host: str = "gpu-node-07", ts: datetime | None = None, **overrides) -> dict:
    ts = ts or recent_minute()
    batch = {
        "batch_id": str(uuid.uuid4()),
        "host": host,
        "agent_version": "0.1.0",
        "sent_at": rfc3339(ts),
        "gpus": [
            {
                "ts": rfc3339(ts),
                "index": 0,
                "uuid": "GPU-1",
                "name": "NVIDIA H100 80GB HBM3",
                "util": 0.97,
                "mem_util": 0.61,
                "mem_used_bytes": 77720453120,
                "mem_total_bytes": 85899345920,
                "power_w": 612.4,
                "temp_c": 61,
                "sm_clock_mhz": 1980,
                "sm_active": 0.31,
                "sm_occupancy": None,
                "dram_active": 0.72,
            }
        ],
        "scrapes": [],
        "requests": [
            {
                "ts": rfc3339(ts + timedelta(seconds=i)),
                "service": "chat-7b",
                "ttft_ms": 100.0 + i,
                "tpot_ms": 20.0,
                "e2e_ms": 1000.0 + 10 * i,
                "queue_ms": 5.0,
                "prompt_tokens": 500,
                "output_tokens": 200,
                "ok": True,
            }
            for i in range(3)
        ],
    }
    batch.update(overrides)
    return batch


@pytest.fixture
def host(db) -> Host:
    return Host.objects.create(name="gpu-node-07")


@pytest.fixture
def agent_token(host) -> str:
    return token_issue(host=host)[1]


@pytest.fixture
def agent_client(agent_token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {agent_token}")
    return client


@pytest.fixture
def vllm_texts(fixtures_dir) -> tuple[str, str]:
    return (
        (fixtures_dir / "vllm" / "metrics-t0.prom").read_text(),
        (fixtures_dir / "vllm" / "metrics-t15.prom").read_text(),
    )
