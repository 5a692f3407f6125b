"""Roll-up rows for page and figure tests, written through collectors' own models.

`seed_traffic` writes, per minute, one `ServiceRollup` row (request-level sketches of e2e,
TTFT and TPOT, token counts, KV cache gauge) and one `GpuRollup` row per GPU, then the
hourly rows merged from those minutes (sketches merged, never averaged), the same shape the
roll-up task writes. Latencies are spread evenly over [0.5, 1.5] x the given base, so the
P99 of any window is close to 1.49 x base.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, timedelta

from analysis import sketches
from collectors.models import HOUR, MINUTE, GpuRollup, Host, ServiceRollup
from collectors.services.rollups import rebuild_derived_rollups
from dossiers.models import Service

GB = 1024**3


def floor_minute(t: datetime) -> datetime:
    return datetime.fromtimestamp(int(t.timestamp()) // 60 * 60, tz=UTC)


def spread(base: float, n: int) -> list[float]:
    return [base * (0.5 + i / n) for i in range(n)]


def service_row(service, host, resolution, start, values: dict, minutes: int, kv, tps,
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


def gpu_row(host, index, resolution, start, *, util, sm_active, dram_active, mem_used):
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
            "e2e": spread(e2e_ms, requests),
            "ttft": spread(ttft_ms, requests),
            "tpot": spread(tpot_ms, requests),
        }
        service_rows.append(
            service_row(
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
                gpu_row(host_obj, g, MINUTE, t, util=util, sm_active=sm_active,
                         dram_active=dram_active, mem_used=60 * GB)
            )  # fmt: skip
    for hour, values in per_hour.items():
        n = hour_minutes[hour]
        service_rows.append(
            service_row(
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
                gpu_row(host_obj, g, HOUR, hour, util=util, sm_active=sm_active,
                         dram_active=dram_active, mem_used=60 * GB)
            )  # fmt: skip
    ServiceRollup.objects.bulk_create(service_rows, batch_size=500)
    GpuRollup.objects.bulk_create(gpu_rows, batch_size=500)
    # The 5-minute and service-merged rows the roll-up writes beside these.
    rebuild_derived_rollups(
        start=start, end=start + timedelta(minutes=minutes), host_ids=[host_obj.pk]
    )
    return host_obj
