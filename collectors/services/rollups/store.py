"""Storing finished roll-up rows: the one way per-host roll-up rows are written, with the rows
derived from them.

`store_rollups` replaces a host's rows of some periods by finished rows, then rewrites what
derives from them: for minutes, the host's 5-minute and hourly rows of those minutes; for every
period written, the service-merged rows (figures, quantiles, GPUs, SLO counts) of the services
touched. The roll-up job stores the minutes it computes from raw rows through it, and the demo's
history its synthesized minutes and hours, so both get their derived rows the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime, timedelta

from django.db import transaction

from collectors.distributions import Traffic
from collectors.models import (
    FIVE_MINUTES,
    HOUR,
    MINUTE,
    GpuRollup,
    Host,
    ServiceMergedRollup,
    ServiceRollup,
)
from collectors.services.rollups.rows import (
    check_finite,
    floor_time,
    merge_gpu_rows,
    merged_row,
    rollup_from_traffic,
)
from collectors.storage import insert_instances
from dossiers.models import Service


def store_rollups(
    *,
    host_id: int,
    resolution: int,
    service_rows: list[ServiceRollup],
    gpu_rows: list[GpuRollup],
    starts: Iterable[datetime] | None = None,
    host_locked: bool = False,
) -> int:
    """Replace the host's `resolution` rows of `starts` (default: the rows' own periods) by
    these finished rows, then rewrite the rows derived from them. Returns the service rows
    written.

    A period in `starts` without a row loses the rows it had (the roll-up recomputes, never
    increments). Minutes are merged into the host's 5-minute and hourly rows of their periods;
    every period written gets its service-merged rows rewritten from every host's rows, under
    the services' locks (taken in one order, as other hosts' roll-ups take them). Holds the
    host's lock, so two writers of one host take turns instead of racing on its unique rows
    (`host_locked`: the caller took it in its own open transaction, and it is not asked again).
    Raises `UnprocessableRows` (nothing written) if a row holds a non-finite number.
    """
    for row in [*service_rows, *gpu_rows]:
        if row.host_id != host_id or row.resolution_s != resolution:
            raise ValueError(f"{row!r}: not a {resolution}s row of host {host_id}")
    starts = sorted(
        set(starts if starts is not None else ()) | {r.start for r in [*service_rows, *gpu_rows]}
    )
    check_finite(service_rows)
    check_finite(gpu_rows)
    # A lock taken outside any transaction would be gone already: only then is it asked again.
    lock_held = host_locked and transaction.get_connection().in_atomic_block
    with transaction.atomic():
        if not lock_held:
            Host.objects.select_for_update().filter(pk=host_id).first()
        mine = {"host_id": host_id, "resolution_s": resolution, "start__in": starts}
        old = ServiceRollup.objects.filter(**mine)
        touched = set(old.values_list("service_id", flat=True).distinct())
        touched |= {row.service_id for row in service_rows}
        old.delete()
        GpuRollup.objects.filter(**mine).delete()
        insert_instances(ServiceRollup, service_rows)
        insert_instances(GpuRollup, gpu_rows)
        periods = {resolution: starts}
        if resolution == MINUTE:
            longer = {r: sorted({floor_time(t, r) for t in starts}) for r in (FIVE_MINUTES, HOUR)}
            _rollup_periods(host_id, longer)
            periods.update(longer)
        if touched:
            # Other hosts of these services may be rolled up by another worker right now:
            # merged rows are rewritten under the services' locks, taken in one order.
            list(Service.objects.select_for_update().filter(pk__in=touched).order_by("pk"))
            for period, period_starts in periods.items():
                merge_services(touched, period, period_starts)
    return len(service_rows)


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
    insert_instances(ServiceMergedRollup, rows)
    return len(rows)


def _spans(periods: dict[int, list[datetime]]) -> list[tuple[datetime, datetime]]:
    """The periods as sorted [start, end) spans, overlapping or back-to-back ones joined."""
    spans: list[tuple[datetime, datetime]] = []
    every = sorted((t, t + timedelta(seconds=r)) for r, starts in periods.items() for t in starts)
    for start, end in every:
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(spans[-1][1], end))
        else:
            spans.append((start, end))
    return spans


def _rollup_periods(host_id: int, periods: dict[int, list[datetime]]) -> None:
    """Rewrite the host's rows of `periods` (resolution -> starts: 5 minutes, hours) from its
    minute rows, read once for every resolution (one read per span of periods)."""
    wanted = {r: set(starts) for r, starts in periods.items()}
    by_service: dict[tuple[int, int, datetime], Traffic] = defaultdict(Traffic)
    by_gpu: dict[tuple[int, int, datetime], list[GpuRollup]] = defaultdict(list)
    for first, end in _spans(periods):
        for row in ServiceRollup.objects.filter(
            host_id=host_id, resolution_s=MINUTE, start__gte=first, start__lt=end
        ):
            for r, starts in wanted.items():
                if (start := floor_time(row.start, r)) in starts:
                    by_service[(r, row.service_id, start)].add_row(row)
        for row in GpuRollup.objects.filter(
            host_id=host_id, resolution_s=MINUTE, start__gte=first, start__lt=end
        ):
            for r, starts in wanted.items():
                if (start := floor_time(row.start, r)) in starts:
                    by_gpu[(r, row.gpu_index, start)].append(row)
    for r, starts in periods.items():
        mine = {"host_id": host_id, "resolution_s": r, "start__in": starts}
        ServiceRollup.objects.filter(**mine).delete()
        GpuRollup.objects.filter(**mine).delete()
    service_rows = [
        rollup_from_traffic(traffic, service_id=service_id, host_id=host_id, resolution=r,
                            start=start)
        for (r, service_id, start), traffic in by_service.items()
    ]  # fmt: skip
    gpu_rows = [
        GpuRollup(
            host_id=host_id, gpu_index=index, resolution_s=r, start=start,
            **merge_gpu_rows(rows),
        )
        for (r, index, start), rows in by_gpu.items()
    ]  # fmt: skip
    check_finite(service_rows)
    check_finite(gpu_rows)
    insert_instances(ServiceRollup, service_rows)
    insert_instances(GpuRollup, gpu_rows)
