"""Valid agent batches for ingest tests (docs/contracts.md): a library module,
imported by tests anywhere; fixtures stay in conftest.py."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

INGEST_URL = "/api/v1/ingest/"


def rfc3339(ts: datetime) -> str:
    return ts.isoformat().replace("+00:00", "Z")


def recent_minute(minutes_ago: int = 5) -> datetime:
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    return now - timedelta(minutes=minutes_ago)


def gpu_sample(ts: str, **changes) -> dict:
    """One GPU's sample as the agent sends it: a busy H100 whose SMs are mostly idle."""
    return {
        "ts": ts,
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
        **changes,
    }


def make_batch(*, host: str = "gpu-node-07", ts: datetime | None = None, **overrides) -> dict:
    ts = ts or recent_minute()
    batch = {
        "batch_id": str(uuid.uuid4()),
        "host": host,
        "agent_version": "0.1.0",
        "sent_at": rfc3339(ts),
        "gpus": [gpu_sample(rfc3339(ts))],
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


def scrape_batch(service_slug: str, source: str, expositions: list[str]) -> dict:
    """A batch holding one scrape per exposition text, 15 s apart, ending a minute ago."""
    start = recent_minute() - timedelta(minutes=1)
    batch = make_batch(requests=[])
    batch["scrapes"] = [
        {"ts": rfc3339(start + timedelta(seconds=15 * i)), "service": service_slug,
         "source": source, "exposition": text}
        for i, text in enumerate(expositions)
    ]  # fmt: skip
    return batch


def post_batch(client, batch: dict):
    """POST a batch to the ingest API as JSON."""
    return client.post(INGEST_URL, json.dumps(batch), content_type="application/json")


def push(client, batch):
    """POST `batch` to the ingest API as its agent would; asserts it was accepted (202)."""
    response = client.post(INGEST_URL, json.dumps(batch), content_type="application/json")
    assert response.status_code == 202, response.content
    return response


def push_capture_pair(
    client, service, fixtures_dir, names: tuple[str, str], *, source: str, seconds: float = 60.0
) -> None:
    """Two captured expositions (tests/fixtures/real/metrics) as two scrapes `seconds` apart,
    as they were taken, each accepted by the ingest API; then rolled up."""
    from collectors.services.rollups import rollup_pending

    t0 = recent_minute() + timedelta(seconds=5)
    for ts, name in ((t0, names[0]), (t0 + timedelta(seconds=seconds), names[1])):
        text = (fixtures_dir / "real" / "metrics" / name).read_text()
        scrape = {"ts": rfc3339(ts), "service": service.slug, "source": source, "exposition": text}
        push(client, make_batch(gpus=[], requests=[], scrapes=[scrape]))
    rollup_pending()


def claims_after_push(service, baseline=None):
    """The claims check over the five minutes the pushed captures fall in."""
    from dashboards.claims import check_claims

    start = recent_minute() - timedelta(minutes=1)
    return check_claims(
        [service], {service.pk: baseline}, start=start, end=start + timedelta(minutes=5)
    )[service.pk]
