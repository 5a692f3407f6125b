"""Apply: merge a parsed dossier into a service, after showing what it will change.

`plan_import` reads the database and says what an import would do (the page's preview);
`apply_import` does it in one transaction. The service's fields (except slug and team: the
target decides those) take the file's values; a narrative that differs becomes a new revision;
config versions, baselines, bottlenecks and experiments not already there are added. Identity:
a config version by (config, note), a baseline by (label, measured_at), a bottleneck by
(title, identified_on), an experiment by (title, run_on); so importing a file twice adds
nothing the second time. A file of another service is refused unless `rename=True`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from dossiers import selectors, services
from dossiers.markdown.grammar import DossierFormatError
from dossiers.markdown.parse import ParsedDossier, parse_dossier
from dossiers.models import Baseline, ConfigVersion, Service, Team


class OtherServiceError(DossierFormatError):
    """The file is another service's dossier and renaming was not asked for."""


@dataclass
class FieldChange:
    name: str
    label: str
    before: Any
    after: Any


@dataclass
class ImportPlan:
    """What importing the file into `service` changes; `summary()` says it in one line."""

    service: Service
    parsed: ParsedDossier
    renames: bool
    field_changes: list[FieldChange] = field(default_factory=list)
    narrative_revised: bool = False
    new_configs: list[str] = field(default_factory=list)
    new_baselines: list[str] = field(default_factory=list)
    new_bottlenecks: list[str] = field(default_factory=list)
    new_experiments: list[str] = field(default_factory=list)
    current_baseline: str | None = None  # label, when the file makes another one current
    current_config: str | None = None

    @property
    def changes_anything(self) -> bool:
        return bool(
            self.field_changes
            or self.narrative_revised
            or self.new_configs
            or self.new_baselines
            or self.new_bottlenecks
            or self.new_experiments
            or self.current_baseline
            or self.current_config
        )

    def summary(self) -> str:
        return (
            f"{len(self.field_changes)} setting(s) changed, narrative "
            f"{'revised' if self.narrative_revised else 'unchanged'}, "
            f"{len(self.new_configs)} config version(s), {len(self.new_baselines)} baseline(s), "
            f"{len(self.new_bottlenecks)} bottleneck(s), {len(self.new_experiments)} "
            "experiment(s) added"
        )

    __str__ = summary


def plan_import(*, service: Service, text: str) -> ImportPlan:
    """Parse `text` and work out what importing it into `service` would change (no writes)."""
    return _plan(service, parse_dossier(text))


def _plan(service: Service, parsed: ParsedDossier) -> ImportPlan:
    plan = ImportPlan(service=service, parsed=parsed, renames=parsed.slug != service.slug)
    for name, value in parsed.service_fields.items():
        if getattr(service, name) != value:
            label = str(Service._meta.get_field(name).verbose_name)
            plan.field_changes.append(FieldChange(name, label, getattr(service, name), value))
    current = selectors.current_narrative(service)
    plan.narrative_revised = parsed.narrative != (current.body.strip() if current else "")

    existing_configs = list(service.config_versions.all())
    for item in parsed.configs:
        found = _same_config(existing_configs, item.config, item.note)
        if found is None:
            plan.new_configs.append(f"v{item.version}" + (f": {item.note}" if item.note else ""))
        if item.is_current and (found is None or not found.is_current):
            plan.current_config = f"v{item.version}"
    for item in parsed.baselines:
        found = service.baselines.filter(
            label=item.label, measured_at=item.fields["measured_at"]
        ).first()
        if found is None:
            plan.new_baselines.append(f"{item.ref}: {item.label}")
        if item.is_current and (found is None or not found.is_current):
            plan.current_baseline = item.label
    for item in parsed.bottlenecks:
        if not service.bottlenecks.filter(
            title=item.title, identified_on=item.fields["identified_on"]
        ).exists():
            plan.new_bottlenecks.append(item.title)
    for item in parsed.experiments:
        if not service.experiments.filter(title=item.title, run_on=item.fields["run_on"]).exists():
            plan.new_experiments.append(item.title)
    return plan


def import_dossier(*, service: Service, text: str, author, rename: bool = False) -> ImportPlan:
    """Plan and apply in one transaction; raise DossierFormatError (nothing changed) if refused."""
    try:
        with transaction.atomic():
            Service.objects.select_for_update().filter(pk=service.pk).first()
            plan = plan_import(service=service, text=text)
            if plan.renames and not rename:
                raise OtherServiceError(
                    f"this file is the dossier of '{plan.parsed.slug}', not '{service.slug}'; "
                    f"importing it would give '{service.slug}' that service's name and settings "
                    "(ask to rename to do that anyway)."
                )
            _apply(plan, author)
            return plan
    except DossierFormatError:
        service.refresh_from_db()
        raise


def create_from_dossier(*, parsed: ParsedDossier, team: Team, author) -> Service:
    """A new service made from a parsed dossier file (slug from its header), atomically."""
    with transaction.atomic():
        service = _validated(
            f"line {parsed.service_line}: Service",
            lambda: services.service_create(team=team, slug=parsed.slug, **parsed.service_fields),
        )
        _apply(_plan(service, parsed), author)
    return service


def _same_config(configs: list[ConfigVersion], config: dict, note: str) -> ConfigVersion | None:
    return next((c for c in configs if c.note == note and c.config == config), None)


def _validated(where: str, callback):
    """Run a model write; a ValidationError becomes a DossierFormatError naming `where`."""
    try:
        return callback()
    except ValidationError as exc:
        if hasattr(exc, "message_dict"):
            detail = "; ".join(
                f"{name}: {' '.join(messages)}" if name != "__all__" else " ".join(messages)
                for name, messages in exc.message_dict.items()
            )
        else:
            detail = " ".join(exc.messages)
        raise DossierFormatError(f"{where}: {detail}") from None


def _apply(plan: ImportPlan, author) -> None:
    parsed, service = plan.parsed, plan.service
    _validated(
        f"line {parsed.service_line}: Service",
        lambda: services.service_update(service=service, **parsed.service_fields),
    )
    if plan.narrative_revised:
        services.narrative_revise(
            service=service, body=parsed.narrative, summary="Imported from Markdown", author=author
        )

    existing = list(service.config_versions.all())
    configs: dict[int, ConfigVersion] = {}
    for item in parsed.configs:
        found = _same_config(existing, item.config, item.note)
        if found is None:
            found = _validated(
                f"line {item.line}: Config versions > v{item.version}",
                lambda item=item: services.config_version_create(
                    service=service,
                    config=item.config,
                    note=item.note,
                    author=author,
                    make_current=False,
                ),
            )
            if item.created is not None:
                # History keeps its dates: a version is dated when it was made, not imported.
                ConfigVersion.objects.filter(pk=found.pk).update(created_at=item.created)
        configs[item.version] = found
        if item.is_current and not found.is_current:
            # A version new to this import was current from its own date; one that existed
            # and comes back as current is made current now (a rollback when it is older).
            created_here = found.pk not in {c.pk for c in existing}
            at = item.created if created_here and item.created is not None else None
            services.config_version_make_current(config_version=found, at=at)
    _date_earlier_configs(service)

    baselines: dict[str, Baseline] = {}
    for item in parsed.baselines:
        found = service.baselines.filter(
            label=item.label, measured_at=item.fields["measured_at"]
        ).first()
        if found is None:
            found = _validated(
                f"line {item.line}: Baselines > {item.ref}",
                lambda item=item: services.baseline_record(
                    service=service,
                    label=item.label,
                    created_by=author,
                    config_version=configs.get(item.config_ref),
                    **item.fields,
                ),
            )
        baselines[item.ref] = found
        if item.is_current and not found.is_current:
            # The document says which baseline is current, not since when: dated by its
            # measurement, so restoring a dossier is not news on this week's timeline.
            services.baseline_promote(
                baseline=found, user=author, credential="dossier import", at=found.measured_at
            )

    for item in parsed.bottlenecks:
        if service.bottlenecks.filter(
            title=item.title, identified_on=item.fields["identified_on"]
        ).exists():
            continue
        _validated(
            f"line {item.line}: Bottlenecks > {item.title}",
            lambda item=item: services.bottleneck_record(
                service=service,
                title=item.title,
                evidence_baselines=[baselines[ref] for ref in item.evidence_refs],
                **item.fields,
            ),
        )

    for item in parsed.experiments:
        if service.experiments.filter(title=item.title, run_on=item.fields["run_on"]).exists():
            continue
        _validated(
            f"line {item.line}: Experiments > {item.title}",
            lambda item=item: services.experiment_record(
                service=service,
                title=item.title,
                before=baselines[item.before_ref],
                after=baselines[item.after_ref] if item.after_ref else None,
                created_by=author,
                **item.fields,
            ),
        )


def _date_earlier_configs(service: Service) -> None:
    """A Markdown file marks only today's current version: the versions before it (lower
    numbers) were each current in their day, from when they were made, so the timeline shows
    them deployed; versions after it stay undated (recorded, not known to have been current)."""
    current = service.config_versions.filter(is_current=True).first()
    if current is None:
        return
    service.config_versions.filter(
        version__lt=current.version, made_current_at__isnull=True
    ).update(made_current_at=F("created_at"))
