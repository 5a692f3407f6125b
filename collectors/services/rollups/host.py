"""Recomputing a host's minutes from the raw rows.

Recomputed, never incremented: each affected (host, minute) is rebuilt from the raw rows, so a
retried task or a late sample simply rewrites its minute. `store_rollups` stores them and
rewrites what derives from them (the 5-minute and hourly rows, the service-merged rows).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime

from django.db import transaction

from analysis import slo
from collectors.models import (
    MINUTE,
    GpuRollup,
    GpuSample,
    Host,
    RequestSample,
    ScrapeWindow,
    ServiceRollup,
)
from collectors.services.rollups.rows import (
    gpu_minute,
    minute_start,
    minute_traffic,
    rollup_from_traffic,
)
from collectors.services.rollups.store import store_rollups
from dossiers.models import Service

# Minutes further apart than this are read from raw rows in separate range queries.
RANGE_GAP_MINUTES = 10


def _clusters(minutes: list[int]) -> list[tuple[int, int]]:
    """Sorted minutes as [first, last] runs, splitting where they are far apart."""
    runs: list[tuple[int, int]] = []
    for m in sorted(set(minutes)):
        if runs and m - runs[-1][1] <= RANGE_GAP_MINUTES:
            runs[-1] = (runs[-1][0], m)
        else:
            runs.append((m, m))
    return runs


def rollup_host_minutes(*, host_id: int, minutes: Iterable[int]) -> int:
    """Recompute the host's minute rows for `minutes` (epoch minutes), then their hours.

    Returns the number of minute rows written. Holds a lock on the host row, so two workers
    re-rolling the same host take turns instead of racing on the unique constraint. The rows
    are stored, with what derives from them, by `store_rollups`.
    """
    wanted = set(minutes)
    service_rows: list[ServiceRollup] = []
    gpu_rows: list[GpuRollup] = []
    with transaction.atomic():
        Host.objects.select_for_update().filter(pk=host_id).first()
        for first, last in _clusters(list(wanted)):
            start, end = minute_start(first), minute_start(last + 1)
            services, gpus = _minute_rows(host_id, wanted, start, end)
            service_rows += services
            gpu_rows += gpus
        return store_rollups(
            host_id=host_id,
            resolution=MINUTE,
            service_rows=service_rows,
            gpu_rows=gpu_rows,
            starts=[minute_start(m) for m in wanted],
            host_locked=True,
        )


def _minute_rows(
    host_id: int, wanted: set[int], start: datetime, end: datetime
) -> tuple[list[ServiceRollup], list[GpuRollup]]:
    """The host's minute rows of the wanted minutes in [start, end), from the raw rows."""
    requests: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for service_id, ts, *values in RequestSample.objects.filter(
        host_id=host_id, ts__gte=start, ts__lt=end
    ).values_list(
        "service_id", "ts", "ttft_ms", "tpot_ms", "e2e_ms", "queue_ms",
        "prompt_tokens", "output_tokens", "ok",
    ):  # fmt: skip
        requests[(service_id, int(ts.timestamp()) // 60)].append(tuple(values))
    windows: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for service_id, ts, *values in ScrapeWindow.objects.filter(
        host_id=host_id, ts__gte=start, ts__lt=end
    ).values_list("service_id", "ts", "seconds", "counters", "histograms", "gauges"):
        windows[(service_id, int(ts.timestamp()) // 60)].append(tuple(values))
    gpus: dict[tuple[int, int], list[tuple]] = defaultdict(list)
    for gpu_index, ts, *values in GpuSample.objects.filter(
        host_id=host_id, ts__gte=start, ts__lt=end
    ).values_list(
        "gpu_index", "ts", "name", "util", "mem_util", "mem_used_bytes", "mem_total_bytes",
        "power_w", "temp_c", "sm_active", "sm_occupancy", "dram_active",
    ):  # fmt: skip
        gpus[(gpu_index, int(ts.timestamp()) // 60)].append(tuple(values))

    in_range = {m for m in wanted if start <= minute_start(m) < end}
    keys = _slo_keys({sid for sid, _ in requests})
    service_rows = [
        rollup_from_traffic(
            minute_traffic(requests.get(key, []), windows.get(key, []), keys.get(key[0])),
            service_id=key[0],
            host_id=host_id,
            resolution=MINUTE,
            start=minute_start(key[1]),
        )
        for key in sorted(set(requests) | set(windows))
        if key[1] in in_range
    ]
    gpu_rows = [
        gpu_minute(host_id, key[0], minute_start(key[1]), rows)
        for key, rows in sorted(gpus.items())
        if key[1] in in_range
    ]
    return service_rows, gpu_rows


def _slo_keys(service_ids: set[int]) -> dict[int, dict[str, dict[str, float]]]:
    """Each service's latency SLOs (their P99 fields' implied one included) as key ->
    thresholds, for the exact per-request counts a minute row keeps (two queries)."""
    if not service_ids:
        return {}
    services = list(Service.objects.filter(pk__in=service_ids).prefetch_related("slos"))
    return {
        s.pk: {
            slo.objective_key(o.thresholds_ms): o.thresholds_ms
            for o in s.slo_objects()
            if o.thresholds_ms
        }
        for s in services
    }
