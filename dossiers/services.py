"""Writes to the dossier. Keyword-only functions; views, commands and the API call these."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Max

from dossiers.models import Baseline, ConfigVersion, NarrativeRevision, Service


def _next_number(queryset, field: str) -> int:
    return (queryset.aggregate(n=Max(field))["n"] or 0) + 1


@transaction.atomic
def narrative_revise(
    *, service: Service, body: str, summary: str = "", author=None
) -> NarrativeRevision:
    """Save a new revision of the narrative; the newest is the current one."""
    Service.objects.select_for_update().filter(pk=service.pk).first()  # serialize numbering
    return NarrativeRevision.objects.create(
        service=service,
        number=_next_number(service.revisions, "number"),
        body=body,
        summary=summary,
        author=author,
    )


@transaction.atomic
def config_version_create(
    *,
    service: Service,
    config: dict[str, Any],
    note: str = "",
    author=None,
    make_current: bool = True,
) -> ConfigVersion:
    Service.objects.select_for_update().filter(pk=service.pk).first()
    version = ConfigVersion(
        service=service,
        version=_next_number(service.config_versions, "version"),
        config=config,
        note=note,
        author=author,
    )
    version.full_clean(exclude=["is_current"])
    version.save()
    if make_current:
        config_version_make_current(config_version=version)
    return version


@transaction.atomic
def config_version_make_current(*, config_version: ConfigVersion) -> None:
    ConfigVersion.objects.filter(service_id=config_version.service_id, is_current=True).exclude(
        pk=config_version.pk
    ).update(is_current=False)
    ConfigVersion.objects.filter(pk=config_version.pk).update(is_current=True)
    config_version.is_current = True


@transaction.atomic
def baseline_promote(*, baseline: Baseline) -> None:
    """Make `baseline` the service's current reference; the previous one stays as history."""
    Baseline.objects.filter(service_id=baseline.service_id, is_current=True).exclude(
        pk=baseline.pk
    ).update(is_current=False)
    Baseline.objects.filter(pk=baseline.pk).update(is_current=True)
    baseline.is_current = True


@transaction.atomic
def baseline_record(
    *, service: Service, label: str, make_current: bool = False, created_by=None, **fields: Any
) -> Baseline:
    """Store a measured baseline (validated), optionally promoting it to current."""
    baseline = Baseline(service=service, label=label, created_by=created_by, **fields)
    baseline.full_clean(exclude=["is_current"])
    baseline.save()
    if make_current:
        baseline_promote(baseline=baseline)
    return baseline
