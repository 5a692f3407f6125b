"""Rebuilding the derived rows (5-minute per host, and service-merged) from the minute and hour
rows: after an upgrade added them, or for test and bench fixtures that insert rows in bulk
(the roll-up job and the demo's history store theirs through `store_rollups`, which derives
them). Never reads raw rows, so it works past raw retention.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction
from django.db.models import Q

from collectors.distributions import Traffic
from collectors.models import FIVE_MINUTES, HOUR, MINUTE, GpuRollup, ServiceRollup
from collectors.services.rollups.rows import floor_time, merge_gpu_rows, rollup_from_traffic
from collectors.services.rollups.store import merge_services
from collectors.storage import insert_instances


def rebuild_derived_rollups(
    *,
    start: datetime,
    end: datetime,
    host_ids: Iterable[int] | None = None,
    five_minute: bool = True,
) -> dict[str, int]:
    """Write the 5-minute per-host rows (from minute rows) and the service-merged rows (every
    resolution) of [start, end), a day at a time. For rows rolled up before these existed
    (after upgrading), and for rows fixtures inserted in bulk.
    Never reads raw rows, so it works past raw retention. Returns rows written per kind."""
    written = {"five_minute": 0, "merged": 0}
    hosts = list(host_ids) if host_ids is not None else None
    day = floor_time(start, 86400)
    while day < end:
        chunk_end = min(day + timedelta(days=1), end)
        with transaction.atomic():
            if five_minute:
                written["five_minute"] += _five_minute_rows(hosts, max(day, start), chunk_end)
            written["merged"] += _merged_rows(hosts, max(day, start), chunk_end)
        day += timedelta(days=1)
    return written


def _host_filter(hosts: list[int] | None) -> Q:
    return Q(host_id__in=hosts) if hosts is not None else Q()


def _five_minute_rows(hosts: list[int] | None, start: datetime, end: datetime) -> int:
    start = floor_time(start, FIVE_MINUTES)
    by_service: dict[tuple[int, int, datetime], Traffic] = defaultdict(Traffic)
    for row in ServiceRollup.objects.filter(
        _host_filter(hosts), resolution_s=MINUTE, start__gte=start, start__lt=end
    ):
        by_service[(row.host_id, row.service_id, floor_time(row.start, FIVE_MINUTES))].add_row(row)
    by_gpu: dict[tuple[int, int, datetime], list[GpuRollup]] = defaultdict(list)
    for row in GpuRollup.objects.filter(
        _host_filter(hosts), resolution_s=MINUTE, start__gte=start, start__lt=end
    ):
        by_gpu[(row.host_id, row.gpu_index, floor_time(row.start, FIVE_MINUTES))].append(row)
    for model in (ServiceRollup, GpuRollup):
        model.objects.filter(
            _host_filter(hosts), resolution_s=FIVE_MINUTES, start__gte=start, start__lt=end
        ).delete()
    insert_instances(
        ServiceRollup,
        [
            rollup_from_traffic(
                traffic, service_id=sid, host_id=hid, resolution=FIVE_MINUTES, start=t
            )
            for (hid, sid, t), traffic in by_service.items()
        ],
    )
    insert_instances(
        GpuRollup,
        [
            GpuRollup(host_id=hid, gpu_index=index, resolution_s=FIVE_MINUTES, start=t,
                      **merge_gpu_rows(rows))
            for (hid, index, t), rows in by_gpu.items()
        ],
    )  # fmt: skip
    return len(by_service)


def _merged_rows(hosts: list[int] | None, start: datetime, end: datetime) -> int:
    written = 0
    for resolution in (MINUTE, FIVE_MINUTES, HOUR):
        pairs = (
            ServiceRollup.objects.filter(
                _host_filter(hosts),
                resolution_s=resolution,
                start__gte=floor_time(start, resolution),
                start__lt=end,
            )
            .values_list("service_id", "start")
            .distinct()
        )
        starts_by_service: dict[int, set[datetime]] = defaultdict(set)
        for sid, t in pairs:
            starts_by_service[sid].add(t)
        all_starts = sorted({t for ts in starts_by_service.values() for t in ts})
        written += merge_services(starts_by_service, resolution, all_starts)
    return written
