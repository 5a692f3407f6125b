"""Recomputing a host's minutes, their 5-minute and hourly rows, and the service-merged rows.

Recomputed, never incremented: each affected (host, minute) is rebuilt from the raw rows and
each affected (host, 5 minutes or hour) from the minute rows, so a retried task or a late
sample simply rewrites its minute. The service-merged rows are rewritten from every host's
rows of the same periods, under the services' locks.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction

from analysis import slo
from collectors.distributions import Traffic
from collectors.models import (
    FIVE_MINUTES,
    HOUR,
    MINUTE,
    GpuRollup,
    GpuSample,
    Host,
    RequestSample,
    ScrapeWindow,
    ServiceMergedRollup,
    ServiceRollup,
)
from collectors.services.rollups.rows import (
    check_finite,
    gpu_minute,
    merge_gpu_rows,
    merged_row,
    minute_start,
    minute_traffic,
    rollup_from_traffic,
)
from dossiers.models import Service

# Minutes further apart than this are read from raw rows in separate range queries.
RANGE_GAP_MINUTES = 10


def merge_services(service_ids: Iterable[int], resolution: int, starts: list[datetime]) -> int:
    """Rewrite the service-merged rows of `service_ids` for `starts` from the per-host rows.

    Two queries to read (every host's rows of those periods, and their GPUs' rows), one
    delete and one insert. Returns the rows written.
    """
    service_ids = sorted(set(service_ids))
    if not service_ids or not starts:
        return 0
    by_key: dict[tuple[int, datetime], dict[int, Traffic]] = defaultdict(
        lambda: defaultdict(Traffic)
    )
    for row in ServiceRollup.objects.filter(
        service_id__in=service_ids, resolution_s=resolution, start__in=starts
    ):
        by_key[(row.service_id, row.start)][row.host_id].add_row(row)
    host_ids = {h for by_host in by_key.values() for h in by_host}
    gpus: dict[tuple[int, datetime], list[GpuRollup]] = defaultdict(list)
    if host_ids:
        for g in GpuRollup.objects.filter(
            host_id__in=host_ids, resolution_s=resolution, start__in=starts
        ):
            gpus[(g.host_id, g.start)].append(g)
    rows = [
        merged_row(sid, resolution, start, by_host, [g for h in by_host for g in gpus[(h, start)]])
        for (sid, start), by_host in sorted(by_key.items())
    ]
    ServiceMergedRollup.objects.filter(
        service_id__in=service_ids, resolution_s=resolution, start__in=starts
    ).delete()
    check_finite(rows)
    ServiceMergedRollup.objects.bulk_create(rows, batch_size=200)
    return len(rows)


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
    re-rolling the same host take turns instead of racing on the unique constraint.
    """
    wanted = set(minutes)
    written = 0
    services: set[int] = set()
    with transaction.atomic():
        Host.objects.select_for_update().filter(pk=host_id).first()
        for first, last in _clusters(list(wanted)):
            start, end = minute_start(first), minute_start(last + 1)
            n, touched = _rollup_range(host_id, wanted, start, end)
            written += n
            services |= touched
        periods = {
            FIVE_MINUTES: sorted({minute_start(m // 5 * 5) for m in wanted}),
            HOUR: sorted({minute_start(m // 60 * 60) for m in wanted}),
        }
        for resolution, starts in periods.items():
            for start in starts:
                _rollup_period(host_id, start, resolution)
        if services:
            # Other hosts of these services may be rolled up by another worker right now:
            # merged rows are rewritten under the services' locks, taken in one order.
            list(Service.objects.select_for_update().filter(pk__in=services).order_by("pk"))
            merge_services(services, MINUTE, sorted(minute_start(m) for m in wanted))
            for resolution, starts in periods.items():
                merge_services(services, resolution, starts)
    return written


def _rollup_range(
    host_id: int, wanted: set[int], start: datetime, end: datetime
) -> tuple[int, set[int]]:
    """Rewrite the host's minute rows in [start, end); returns (rows, services touched)."""
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
    starts = [minute_start(m) for m in in_range]
    old = ServiceRollup.objects.filter(host_id=host_id, resolution_s=MINUTE, start__in=starts)
    touched = set(old.values_list("service_id", flat=True).distinct())
    touched |= {row.service_id for row in service_rows}
    old.delete()
    GpuRollup.objects.filter(host_id=host_id, resolution_s=MINUTE, start__in=starts).delete()
    check_finite(service_rows)
    check_finite(gpu_rows)
    ServiceRollup.objects.bulk_create(service_rows, batch_size=200)
    GpuRollup.objects.bulk_create(gpu_rows, batch_size=500)
    return len(service_rows), touched


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


def _rollup_period(host_id: int, hour: datetime, resolution: int) -> None:
    """Rewrite the host's `resolution` rows (5 minutes or an hour) starting at `hour`."""
    end = hour + timedelta(seconds=resolution)
    by_service: dict[int, Traffic] = defaultdict(Traffic)
    for row in ServiceRollup.objects.filter(
        host_id=host_id, resolution_s=MINUTE, start__gte=hour, start__lt=end
    ):
        by_service[row.service_id].add_row(row)
    by_gpu: dict[int, list[GpuRollup]] = defaultdict(list)
    for row in GpuRollup.objects.filter(
        host_id=host_id, resolution_s=MINUTE, start__gte=hour, start__lt=end
    ):
        by_gpu[row.gpu_index].append(row)
    ServiceRollup.objects.filter(host_id=host_id, resolution_s=resolution, start=hour).delete()
    GpuRollup.objects.filter(host_id=host_id, resolution_s=resolution, start=hour).delete()
    service_rows = [
        rollup_from_traffic(
            traffic, service_id=service_id, host_id=host_id, resolution=resolution, start=hour
        )
        for service_id, traffic in by_service.items()
    ]
    gpu_rows = [
        GpuRollup(
            host_id=host_id, gpu_index=index, resolution_s=resolution, start=hour,
            **merge_gpu_rows(rows),
        )
        for index, rows in by_gpu.items()
    ]  # fmt: skip
    check_finite(service_rows)
    check_finite(gpu_rows)
    ServiceRollup.objects.bulk_create(service_rows)
    GpuRollup.objects.bulk_create(gpu_rows)
