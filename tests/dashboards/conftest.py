"""Seeding for dashboard tests: roll-up rows written through collectors' own models.

`seed_traffic` writes, per minute, one `ServiceRollup` row (request-level sketches of e2e,
TTFT and TPOT, token counts, KV cache gauge) and one `GpuRollup` row per GPU, then the
hourly rows merged from those minutes (sketches merged, never averaged), the same shape the
roll-up task writes. Latencies are spread evenly over [0.5, 1.5] x the given base, so the
P99 of any window is close to 1.49 x base.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from analysis import sketches
from collectors.models import HOUR, MINUTE, GpuRollup, Host, ServiceRollup
from collectors.services.rollups import rebuild_derived_rollups
from dossiers.models import Baseline, Service
from loadtests.models import LoadTest, LoadTestSketch

GB = 1024**3


def floor_minute(t: datetime) -> datetime:
    return datetime.fromtimestamp(int(t.timestamp()) // 60 * 60, tz=UTC)


def _values(base: float, n: int) -> list[float]:
    return [base * (0.5 + i / n) for i in range(n)]


def _service_row(service, host, resolution, start, values: dict, minutes: int, kv, tps,
                 prompt_tps=None):  # fmt: skip
    n = len(values["e2e"])
    prompt_tps = tps / 2 if prompt_tps is None else prompt_tps
    row = ServiceRollup(
        service=service,
        host=host,
        resolution_s=resolution,
        start=start,
        requests=n,
        prompt_tokens=int(prompt_tps * 60 * minutes),
        output_tokens=int(tps * 60 * minutes),
        request_seconds=60.0 * minutes,
        qps=n / (60.0 * minutes),
        prompt_tps=prompt_tps,
        generation_tps=tps,
        gauge_samples=4 * minutes,
        kv_cache_mean=kv,
    )
    for metric, items in values.items():
        sketch = sketches.from_values(items)
        stats = sketches.summary(sketch)
        setattr(row, f"{metric}_sketch", sketches.dumps(sketch))
        setattr(row, f"{metric}_count", stats["count"])
        setattr(row, f"{metric}_sum", stats["sum"])
        setattr(row, f"{metric}_min", stats["min"])
        setattr(row, f"{metric}_max", stats["max"])
    return row


def _gpu_row(host, index, resolution, start, *, util, sm_active, dram_active, mem_used):
    return GpuRollup(
        host=host,
        gpu_index=index,
        resolution_s=resolution,
        start=start,
        samples=6,
        name="NVIDIA A100 80GB",
        util_mean=util,
        mem_util_mean=0.5,
        sm_active_mean=sm_active,
        dram_active_mean=dram_active,
        power_mean=300.0,
        mem_used_max=mem_used,
        mem_total_bytes=80 * GB,
        temp_max=60.0,
    )


def seed_traffic(
    *,
    service: Service,
    host: str = "gpu-host-1",
    start: datetime,
    minutes: int,
    requests: int = 120,
    e2e_ms: float = 1000.0,
    ttft_ms: float = 200.0,
    tpot_ms: float = 20.0,
    gpus: int = 2,
    util: float = 0.95,
    sm_active: float | None = 0.4,
    dram_active: float | None = 0.7,
    kv: float | None = 0.5,
    tokens_per_second: float = 2000.0,
    prompt_tokens_per_second: float | None = None,  # default: half the output's
) -> Host:
    host_obj, _ = Host.objects.get_or_create(name=host)
    start = floor_minute(start)
    service_rows, gpu_rows = [], []
    per_hour: dict[datetime, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    hour_minutes: dict[datetime, int] = defaultdict(int)
    for i in range(minutes):
        t = start + timedelta(minutes=i)
        values = {
            "e2e": _values(e2e_ms, requests),
            "ttft": _values(ttft_ms, requests),
            "tpot": _values(tpot_ms, requests),
        }
        service_rows.append(
            _service_row(
                service,
                host_obj,
                MINUTE,
                t,
                values,
                1,
                kv,
                tokens_per_second,
                prompt_tokens_per_second,
            )
        )
        hour = t.replace(minute=0, second=0, microsecond=0)
        hour_minutes[hour] += 1
        for metric, items in values.items():
            per_hour[hour][metric] += items
        for g in range(gpus):
            gpu_rows.append(
                _gpu_row(host_obj, g, MINUTE, t, util=util, sm_active=sm_active,
                         dram_active=dram_active, mem_used=60 * GB)
            )  # fmt: skip
    for hour, values in per_hour.items():
        n = hour_minutes[hour]
        service_rows.append(
            _service_row(
                service,
                host_obj,
                HOUR,
                hour,
                values,
                n,
                kv,
                tokens_per_second,
                prompt_tokens_per_second,
            )
        )
        for g in range(gpus):
            gpu_rows.append(
                _gpu_row(host_obj, g, HOUR, hour, util=util, sm_active=sm_active,
                         dram_active=dram_active, mem_used=60 * GB)
            )  # fmt: skip
    ServiceRollup.objects.bulk_create(service_rows, batch_size=500)
    GpuRollup.objects.bulk_create(gpu_rows, batch_size=500)
    # The 5-minute and service-merged rows the roll-up writes beside these.
    rebuild_derived_rollups(
        start=start, end=start + timedelta(minutes=minutes), host_ids=[host_obj.pk]
    )
    return host_obj


def make_service(team, slug: str, **extra) -> Service:
    fields = {
        "name": slug.replace("-", " ").title(),
        "team": team,
        "model_name": "Llama-3-8B",
        "model_params_b": Decimal("8"),
        "engine": "vllm",
        "gpu_model": "NVIDIA A100 80GB",
        "gpus_per_replica": 1,
        "replicas": 2,
        "slo_p99_e2e_ms": 1200,
        "slo_p99_ttft_ms": 400,
        "slo_p99_tpot_ms": 40,
        "gpu_hour_price": Decimal("10"),
        "price_per_mtok": Decimal("5"),
    }
    fields.update(extra)
    return Service.objects.create(slug=slug, **fields)


def make_baseline(service: Service, **extra) -> Baseline:
    fields = {
        "label": "vLLM 0.6.3, batch 16",
        "measured_at": datetime(2026, 11, 1, tzinfo=UTC),
        "is_current": True,
        "request_count": 2000,
        "output_tps": 2000.0,
        "input_tps": 1000.0,
        "qps": 8.0,
        "e2e_p50_ms": 800.0,
        "e2e_p99_ms": 1500.0,
        "ttft_p50_ms": 150.0,
        "ttft_p99_ms": 300.0,
        "tpot_p50_ms": 15.0,
        "tpot_p99_ms": 30.0,
    }
    source = extra.pop("source_load_test", None)
    fields.update(extra)
    baseline = Baseline.objects.create(service=service, **fields)
    if source is not None:
        source.promoted_to = baseline
        source.save(update_fields=["promoted_to"])
    return baseline


def make_load_test(service, label="candidate 0.7.0", *, e2e=None, **extra) -> LoadTest:
    fields = {
        "label": label,
        "format": "vllm_bench",
        "content_sha256": label.ljust(64, "0")[:64],
        "run_index": 0,
        "measured_at": datetime(2026, 11, 10, tzinfo=UTC),
        "request_count": 1000,
        "e2e_p50_ms": 900.0,
        "e2e_p90_ms": 1300.0,
        "e2e_p99_ms": 1700.0,
    }
    fields.update(extra)
    run = LoadTest.objects.create(service=service, **fields)
    if e2e is not None:
        sketch = sketches.from_values(e2e)
        LoadTestSketch.objects.create(
            load_test=run,
            family="e2e",
            sketch=sketches.dumps(sketch),
            count=len(e2e),
            sum_ms=sum(e2e),
            min_ms=min(e2e),
            max_ms=max(e2e),
        )
    return run


@pytest.fixture
def now() -> datetime:
    return datetime.now(tz=UTC)
