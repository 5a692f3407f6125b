"""Writes to the dossier. Keyword-only functions; views, commands and the API call these."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any, TypeVar

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max, Model
from django.utils import timezone

from dossiers.models import (
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    NarrativeRevision,
    Service,
    Slo,
    Team,
)


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
def config_version_make_current(
    *, config_version: ConfigVersion, at: datetime | None = None
) -> None:
    """Make the version the current config from `at` (now by default). Making an older version
    current again is a rollback: the timeline says so, from the dates recorded here."""
    at = at or timezone.now()
    ConfigVersion.objects.filter(service_id=config_version.service_id, is_current=True).exclude(
        pk=config_version.pk
    ).update(is_current=False)
    ConfigVersion.objects.filter(pk=config_version.pk).update(is_current=True, made_current_at=at)
    config_version.is_current = True
    config_version.made_current_at = at


@transaction.atomic
def baseline_promote(
    *, baseline: Baseline, user=None, credential: str = "", at: datetime | None = None
) -> None:
    """Make `baseline` the service's current reference; the previous one stays as history.

    Records when (`at`, default now), by whom (`user`, a person) and through which API
    credential or channel (`credential`, such as a CI token's prefix), for the dossier timeline.
    """
    Baseline.objects.filter(service_id=baseline.service_id, is_current=True).exclude(
        pk=baseline.pk
    ).update(is_current=False)
    promoted = {
        "is_current": True,
        "promoted_at": at or timezone.now(),
        "promoted_by": user if getattr(user, "pk", None) else None,
        "promoted_via": credential[:200],
    }
    Baseline.objects.filter(pk=baseline.pk).update(**promoted)
    for name, value in promoted.items():
        setattr(baseline, name, value)


@transaction.atomic
def baseline_record(
    *,
    service: Service,
    label: str,
    make_current: bool = False,
    created_by=None,
    credential: str = "",
    **fields: Any,
) -> Baseline:
    """Store a measured baseline (validated), optionally promoting it to current."""
    baseline = Baseline(service=service, label=label, created_by=created_by, **fields)
    baseline.full_clean(exclude=["is_current"])
    baseline.save()
    if make_current:
        baseline_promote(baseline=baseline, user=created_by, credential=credential)
    return baseline


M = TypeVar("M", bound=Model)


def _validated_save(instance: M, fields: dict[str, Any], *, exclude=()) -> M:
    """Apply `fields`, validate the whole row (field, model and unique rules), then save;
    returns the instance.

    A ValidationError leaves the database untouched: nothing is written before full_clean passes.
    """
    for name, value in fields.items():
        setattr(instance, name, value)
    instance.full_clean(exclude=list(exclude))
    instance.save()
    return instance


@transaction.atomic
def service_create(*, team: Team, **fields: Any) -> Service:
    return _validated_save(Service(team=team), fields)


@transaction.atomic
def service_update(*, service: Service, **fields: Any) -> Service:
    return _validated_save(service, fields)


@transaction.atomic
def baseline_update(*, baseline: Baseline, **fields: Any) -> Baseline:
    """Correct a recorded baseline; promotion stays with `baseline_promote`."""
    fields.pop("is_current", None)
    return _validated_save(baseline, fields, exclude=["is_current"])


def _same_service(service: Service, baselines: Iterable[Baseline], field: str) -> list[Baseline]:
    baselines = list(baselines)
    if any(b.service_id != service.pk for b in baselines):
        raise ValidationError({field: "Evidence must be baselines of this service."})
    return baselines


@transaction.atomic
def bottleneck_record(
    *, service: Service, evidence_baselines: Iterable[Baseline] = (), **fields: Any
) -> Bottleneck:
    evidence = _same_service(service, evidence_baselines, "evidence_baselines")
    bottleneck = Bottleneck(service=service)
    _validated_save(bottleneck, fields)
    bottleneck.evidence_baselines.set(evidence)
    return bottleneck


@transaction.atomic
def bottleneck_update(
    *, bottleneck: Bottleneck, evidence_baselines: Iterable[Baseline] | None = None, **fields: Any
) -> Bottleneck:
    evidence = None
    if evidence_baselines is not None:
        evidence = _same_service(bottleneck.service, evidence_baselines, "evidence_baselines")
    _validated_save(bottleneck, fields)
    if evidence is not None:
        bottleneck.evidence_baselines.set(evidence)
    return bottleneck


@transaction.atomic
def experiment_record(*, service: Service, created_by=None, **fields: Any) -> Experiment:
    """Record an optimization attempt; `clean()` keeps before/after inside this service."""
    return _validated_save(Experiment(service=service, created_by=created_by), fields)


@transaction.atomic
def experiment_update(*, experiment: Experiment, **fields: Any) -> Experiment:
    return _validated_save(experiment, fields)


@transaction.atomic
def slo_record(*, service: Service, **fields: Any) -> Slo:
    """Add an SLO; its burn-rate alerts follow from the service's default rules."""
    return _validated_save(Slo(service=service), fields)


@transaction.atomic
def slo_update(*, slo: Slo, **fields: Any) -> Slo:
    return _validated_save(slo, fields)


def slo_delete(*, slo: Slo) -> None:
    slo.delete()
