"""Impossible numbers never enter through ingest (both validation paths name the field), and
the largest numbers that do enter roll up into finite values at every resolution."""

from __future__ import annotations

import json
import math

import pytest
from django.db import models

from analysis import plausibility
from collectors.models import (
    RESOLUTIONS,
    GpuRollup,
    IngestBatch,
    ServiceMergedRollup,
    ServiceRollup,
)
from collectors.services.rollups import rollup_pending
from tests.factories.batches import INGEST_URL, make_batch, recent_minute, rfc3339

pytestmark = pytest.mark.django_db


def post(client, batch):
    return client.post(INGEST_URL, batch, format="json")


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda b: b["gpus"][0].update(power_w=1e308), "gpus[0].power_w"),
        (lambda b: b["gpus"][0].update(power_w=50_000), "gpus[0].power_w"),
        (lambda b: b["gpus"][0].update(temp_c=900), "gpus[0].temp_c"),
        (lambda b: b["gpus"][0].update(sm_clock_mhz=1e12), "gpus[0].sm_clock_mhz"),
        (lambda b: b["gpus"][0].update(mem_total_bytes=2**60), "gpus[0].mem_total_bytes"),
        (lambda b: b["requests"][0].update(e2e_ms=1e308), "requests[0].e2e_ms"),
        (lambda b: b["requests"][1].update(queue_ms=86_400_001), "requests[1].queue_ms"),
        (lambda b: b["requests"][0].update(output_tokens=10**12), "requests[0].output_tokens"),
    ],
    ids=[
        "power-1e308",
        "power-50kW",
        "temp",
        "clock",
        "memory",
        "e2e-1e308",
        "queue-a-day",
        "tokens",
    ],
)
def test_a_value_outside_its_physical_range_is_refused_naming_the_field(
    agent_client, service, mutate, path
):
    batch = make_batch()
    mutate(batch)
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert list(response.json()) == [path]
    assert "is outside" in response.json()[path][0]
    assert not IngestBatch.objects.exists()


def test_a_first_token_after_the_last_is_refused(agent_client, service):
    batch = make_batch()
    batch["requests"][2].update(ttft_ms=5000.0, e2e_ms=1000.0)
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert "above the end-to-end latency" in response.json()["requests[2].ttft_ms"][0]


def test_more_memory_used_than_the_gpu_has_is_refused(agent_client, service):
    batch = make_batch()
    batch["gpus"][0].update(mem_used_bytes=90 * 2**30, mem_total_bytes=80 * 2**30)
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert list(response.json()) == ["gpus[0].mem_used_bytes"]


def test_a_dcgm_scrape_with_an_impossible_power_is_refused(agent_client, service):
    ts = rfc3339(recent_minute())
    text = (
        "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-1",modelName="H100"} 50000\n'
    )
    batch = make_batch(scrapes=[{"ts": ts, "source": "dcgm", "exposition": text}])
    response = post(agent_client, batch)
    assert response.status_code == 400
    assert "power_w" in response.json()["scrapes[0].exposition"][0]


def _largest_batch(minute) -> dict:
    """Every number at the top of its accepted range."""
    top = plausibility
    batch = make_batch(ts=minute)
    gpu = batch["gpus"][0]
    gpu.update(
        util=1.0, mem_util=1.0, sm_active=1.0, sm_occupancy=1.0, dram_active=1.0,
        power_w=top.POWER_W.high, temp_c=top.TEMPERATURE_C.high, sm_clock_mhz=top.CLOCK_MHZ.high,
        mem_used_bytes=int(top.GPU_MEMORY_BYTES.high),
        mem_total_bytes=int(top.GPU_MEMORY_BYTES.high),
    )  # fmt: skip
    for request in batch["requests"]:
        request.update(
            ttft_ms=top.LATENCY_MS.high, tpot_ms=top.LATENCY_MS.high, e2e_ms=top.LATENCY_MS.high,
            queue_ms=top.LATENCY_MS.high, prompt_tokens=int(top.TOKENS.high),
            output_tokens=int(top.TOKENS.high),
        )  # fmt: skip
    batch["requests"] *= 50
    return batch


def _numbers(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, float | int) and not isinstance(value, bool):
        yield value


def test_the_largest_accepted_values_roll_up_to_finite_numbers(agent_client, service):
    for minutes_ago in (3, 4, 5, 6, 7):
        response = post(agent_client, _largest_batch(recent_minute(minutes_ago)))
        assert response.status_code == 202, response.json()
    assert rollup_pending() == 5
    rows = 0
    for model in (ServiceRollup, GpuRollup, ServiceMergedRollup):
        for row in model.objects.all():
            rows += 1
            for field in model._meta.concrete_fields:
                value = getattr(row, field.attname)
                if isinstance(field, models.FloatField | models.JSONField):
                    bad = [v for v in _numbers(value) if not math.isfinite(v)]
                    assert bad == [], f"{model.__name__}.{field.name}: {bad}"
            json.dumps(  # what the API and the pages serialize: no Infinity either
                {f.attname: getattr(row, f.attname) for f in model._meta.concrete_fields
                 if isinstance(f, models.FloatField | models.JSONField)},
                allow_nan=False,
            )  # fmt: skip
    resolutions = set(ServiceRollup.objects.values_list("resolution_s", flat=True))
    assert resolutions == set(RESOLUTIONS)  # the 1-minute, 5-minute and hourly rows
