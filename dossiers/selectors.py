"""Reads that feed dossier pages."""

from __future__ import annotations

from django.db.models import Count, Prefetch, Q, QuerySet

from dossiers.models import Baseline, Bottleneck, ConfigVersion, NarrativeRevision, Service


def current_baseline(service: Service) -> Baseline | None:
    return service.baselines.filter(is_current=True).select_related("config_version").first()


def current_config(service: Service) -> ConfigVersion | None:
    return service.config_versions.filter(is_current=True).first()


def current_narrative(service: Service) -> NarrativeRevision | None:
    return service.revisions.select_related("author").first()


def fleet_services() -> QuerySet[Service]:
    """Every service with its team, current baseline and open bottleneck count, in 2 queries."""
    return (
        Service.objects.select_related("team")
        .annotate(
            open_bottlenecks=Count(
                "bottlenecks",
                filter=Q(bottlenecks__status__in=Bottleneck.OPEN_STATUSES),
            )
        )
        .prefetch_related(
            Prefetch(
                "baselines",
                queryset=Baseline.objects.filter(is_current=True),
                to_attr="current_baselines",
            )
        )
    )
