"""The hosts page's reads: every host with its health and services, and its quarantined
batches."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count

from collectors.models import (
    HOUR,
    Host,
    IngestBatch,
    ServiceRollup,
)


def hosts_overview() -> list[Host]:
    """Every host with its pull target's service, for the hosts page (one query)."""
    return list(Host.objects.select_related("pull_service").order_by("name"))


# The hosts page lists the services a host reported within this window (from hourly rows).
HOST_SERVICES_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class HostService:
    slug: str
    name: str


@dataclass(frozen=True)
class HostRow:
    host: Host
    health: str
    health_label: str
    health_detail: str
    services: list[HostService]  # the pull target, then what it reported, by name
    quarantined: int = 0  # batches the roll-up set aside (see `host_quarantine`)


def quarantine_counts() -> dict[int, int]:
    """Quarantined batches per host id (one query, on the partial quarantine index)."""
    return dict(
        IngestBatch.objects.filter(quarantined_at__isnull=False)
        .values_list("host_id")
        .annotate(n=Count("id"))
        .values_list("host_id", "n")
    )


def host_rows(*, now: datetime) -> list[HostRow]:
    """Every host with its health at `now` and its services, for the hosts page (three queries:
    the hosts, the (host, service) pairs of the last HOST_SERVICES_WINDOW's hourly rows, and
    the quarantined batch counts)."""
    quarantined = quarantine_counts()
    reported: dict[int, dict[str, HostService]] = defaultdict(dict)
    for host_id, slug, name in (
        ServiceRollup.objects.filter(resolution_s=HOUR, start__gte=now - HOST_SERVICES_WINDOW)
        .values_list("host_id", "service__slug", "service__name")
        .distinct()
    ):
        reported[host_id][slug] = HostService(slug=slug, name=name)
    rows = []
    for host in hosts_overview():
        services = sorted(reported[host.pk].values(), key=lambda s: s.name)
        if host.pull_service is not None:
            target = HostService(slug=host.pull_service.slug, name=host.pull_service.name)
            services = [target] + [s for s in services if s.slug != target.slug]
        health = host.health(now)
        rows.append(
            HostRow(
                host=host,
                health=health.value,
                health_label=health.label,
                health_detail=host.health_detail(now),
                services=services,
                quarantined=quarantined.get(host.pk, 0),
            )
        )
    return rows


@dataclass(frozen=True)
class HostQuarantine:
    count: int
    batches: list[IngestBatch]  # the newest, at most `limit`


def host_quarantine(*, host: Host, limit: int = 50) -> HostQuarantine:
    """The host's quarantined batches, newest first, with their reasons (two queries)."""
    qs = IngestBatch.objects.filter(host=host, quarantined_at__isnull=False)
    batches = list(
        qs.order_by("-quarantined_at", "-id").only(
            "id", "batch_id", "host_id", "received_at", "counts", "quarantined_at",
            "quarantine_reason",
        )[:limit]
    )  # fmt: skip
    return HostQuarantine(count=qs.count(), batches=batches)
