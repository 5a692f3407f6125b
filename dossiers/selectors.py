"""Reads that feed dossier pages."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import NamedTuple

from django.conf import settings
from django.db.models import Count, OuterRef, Prefetch, Q, QuerySet, Subquery
from django.urls import reverse

from analysis import claims, cost
from analysis.percentiles import QUANTILE_OF, minimum_count
from dossiers import provenance
from dossiers.models import (
    LATENCY_METRICS,
    PERCENTILES,
    Baseline,
    Bottleneck,
    ConfigVersion,
    Experiment,
    MeasuredRun,
    NarrativeRevision,
    Service,
)


def current_baseline(service: Service) -> Baseline | None:
    return service.baselines.filter(is_current=True).select_related("config_version").first()


def current_config(service: Service) -> ConfigVersion | None:
    return service.config_versions.filter(is_current=True).first()


def current_narrative(service: Service) -> NarrativeRevision | None:
    return service.revisions.select_related("author").first()


# --- Pages --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ListedObjective:
    """A listed SLO's threshold on one metric ("TTFT <= 500 ms for 99% of requests")."""

    slo_name: str
    threshold_ms: float
    target_percent: float
    implied: bool  # the unsaved SLO `Service.slo_objects` makes of the P99 settings


@dataclass(frozen=True)
class SloCheck:
    """One P99 target beside the current baseline's P99: status is ok, missed or no data.

    The target is the service's "SLO P99" setting for the metric (`Service.slo_for`), which the
    P99 alert rules, a sweep's sweet spot and the planner read. The SLOs listed on the dossier
    (`Service.slo_objects`) are another notion: once a latency SLO is saved, the settings are no
    longer among them, so `listed` says what the listed SLOs set on this metric and `agreement`
    whether they match."""

    metric: str
    label: str
    target_ms: float | None
    measured_ms: float | None
    setting: str = ""  # the setting's name, e.g. "SLO P99 end-to-end (ms)"
    setting_url: str = ""  # where it is set: the service form, at the field
    listed: tuple[ListedObjective, ...] = ()

    @property
    def status(self) -> str:
        if self.target_ms is None or self.measured_ms is None:
            return "no data"
        return "ok" if self.measured_ms <= self.target_ms else "missed"

    @property
    def agreement(self) -> str:
        """ "listed" (a listed SLO holds the same P99 target), "not listed" (the setting is in
        no listed SLO), "differs" (a listed SLO sets another threshold or share on the metric),
        or "" (neither sets anything)."""
        if not self.listed:
            return "not listed" if self.target_ms is not None else ""
        same = [
            o
            for o in self.listed
            if self.target_ms is not None
            and o.threshold_ms == self.target_ms
            and o.target_percent == 99.0
        ]
        return "listed" if same and len(same) == len(self.listed) else "differs"

    @property
    def agreement_note(self) -> str:
        """The plain sentence the page shows beside the target."""
        listed = "; ".join(
            f"“{o.slo_name}”: {self.label} ≤ {o.threshold_ms:,.0f} ms for "
            f"{o.target_percent:g}% of requests"
            for o in self.listed
        )
        return {
            "listed": f"Also a listed SLO ({listed}).",
            "not listed": "In no listed SLO: their compliance and budgets do not count it.",
            "differs": f"The listed SLOs say otherwise ({listed}).",
        }.get(self.agreement, "")


SLO_LABELS = {"e2e": "end-to-end", "ttft": "TTFT", "tpot": "TPOT"}


def _listed_objectives(service: Service) -> dict[str, list[ListedObjective]]:
    """Each metric's thresholds in the service's listed latency SLOs (one query)."""
    found: dict[str, list[ListedObjective]] = {}
    for slo in service.slo_objects():
        for metric, threshold, _target in slo.objectives():
            found.setdefault(metric, []).append(
                ListedObjective(slo.name, threshold, slo.target_percent, implied=slo.pk is None)
            )
    return found


def slo_check(
    service: Service,
    baseline: Baseline | None,
    metric: str,
    listed: dict[str, list[ListedObjective]] | None = None,
) -> SloCheck:
    """One metric's P99 setting against the baseline's P99 (`listed`: see `_listed_objectives`;
    left out, the check says nothing of the listed SLOs)."""
    field_name = f"slo_p99_{metric}_ms"
    return SloCheck(
        metric,
        SLO_LABELS[metric],
        service.slo_for(metric),
        baseline.latency(metric, "p99") if baseline else None,
        setting=str(Service._meta.get_field(field_name).verbose_name),
        setting_url=reverse("dossiers:service_edit", args=[service.slug]) + f"#id_{field_name}",
        listed=tuple((listed or {}).get(metric, ())),
    )


def slo_checks(service: Service, baseline: Baseline | None) -> list[SloCheck]:
    listed = _listed_objectives(service)
    return [slo_check(service, baseline, metric, listed) for metric in SLO_LABELS]


@dataclass(frozen=True)
class FleetRow:
    service: Service
    baseline: Baseline | None
    e2e: SloCheck
    economics: cost.Economics | None
    open_bottlenecks: int
    updated: datetime
    first_open_bottleneck_id: int | None = None  # where the fleet's "N open" link lands

    @property
    def p99_ms(self) -> float | None:
        return self.e2e.measured_ms

    @property
    def cost_per_mtok(self) -> float | None:
        return self.economics.cost_per_mtok if self.economics else None

    @property
    def margin(self) -> float | None:
        return self.economics.margin if self.economics else None

    @property
    def gpu_hours_per_day(self) -> float:
        """Every reserved GPU, busy or idle: replicas x GPUs per replica x 24."""
        return cost.gpu_hours_per_day(gpus=self.service.total_gpus)

    @property
    def cost_per_day(self) -> float:
        return self.gpu_hours_per_day * float(self.service.gpu_hour_price)


FLEET_SORTS = {
    "name": lambda row: row.service.name.lower(),
    "team": lambda row: row.service.team.name.lower(),
    "p99": lambda row: row.p99_ms,
    "cost": lambda row: row.cost_per_mtok,
    "margin": lambda row: row.margin,
    "gpu_hours": lambda row: row.gpu_hours_per_day,
    "bottlenecks": lambda row: row.open_bottlenecks,
    "updated": lambda row: row.updated,
}


# Newest first inside a group; the groups (open, then past) come from `bottleneck_groups`.
BOTTLENECK_ORDER = ("-identified_on", "-pk")


def bottleneck_groups(bottlenecks: list[Bottleneck]) -> list[tuple[str, list[Bottleneck]]]:
    """Open bottlenecks first (top layer first, then newest), then mitigated or won't fix."""
    layers = [value for value, _ in Bottleneck.Layer.choices]

    def key(b: Bottleneck) -> int:  # a stable sort keeps the newest first within a layer
        return layers.index(b.layer) if b.layer in layers else len(layers)

    open_ones = sorted((b for b in bottlenecks if b.is_open), key=key)
    past = sorted((b for b in bottlenecks if not b.is_open), key=key)
    groups = [("Open", open_ones), ("Mitigated or won't fix", past)]
    return [(label, items) for label, items in groups if items]


def fleet_rows(*, q: str = "", sort: str = "name") -> list[FleetRow]:
    """The fleet table: one row per service matching `q`, sorted by `sort` (`-` for descending).

    Two queries whatever the fleet's size; cost and margin are computed in Python, so sorting
    happens here too. Rows without a value for the sort key go last in both directions.
    """
    services = Service.objects.select_related("team").annotate(
        open_bottlenecks=Subquery(
            Bottleneck.objects.filter(service=OuterRef("pk"), status__in=Bottleneck.OPEN_STATUSES)
            .values("service")
            .annotate(n=Count("pk"))
            .values("n")[:1]
        ),
        first_open_bottleneck_id=Subquery(
            Bottleneck.objects.filter(service=OuterRef("pk"), status__in=Bottleneck.OPEN_STATUSES)
            .order_by(*BOTTLENECK_ORDER)
            .values("pk")[:1]
        ),
        last_revision_at=Subquery(
            NarrativeRevision.objects.filter(service=OuterRef("pk"))
            .order_by("-created_at")
            .values("created_at")[:1]
        ),
    )
    if q := q.strip():
        services = services.filter(
            Q(name__icontains=q)
            | Q(slug__icontains=q)
            | Q(model_name__icontains=q)
            | Q(engine__icontains=q)
            | Q(team__name__icontains=q)
        )
    services = services.prefetch_related(
        Prefetch(
            "baselines",
            queryset=Baseline.objects.filter(is_current=True),
            to_attr="current_baselines",
        )
    )
    rows = []
    for service in services:
        baseline = service.current_baselines[0] if service.current_baselines else None
        updated = max(
            t
            for t in (
                service.updated_at,
                service.last_revision_at,
                baseline.created_at if baseline else None,
            )
            if t is not None
        )
        rows.append(
            FleetRow(
                service=service,
                baseline=baseline,
                e2e=slo_check(service, baseline, "e2e"),
                economics=baseline.economics(service) if baseline else None,
                open_bottlenecks=service.open_bottlenecks or 0,
                updated=updated,
                first_open_bottleneck_id=service.first_open_bottleneck_id,
            )
        )
    descending = sort.startswith("-")
    key = FLEET_SORTS.get(sort.lstrip("-"), FLEET_SORTS["name"])
    present = [row for row in rows if key(row) is not None]
    missing = [row for row in rows if key(row) is None]
    return sorted(present, key=key, reverse=descending) + missing


@dataclass(frozen=True)
class EconomicsView:
    """Cost per Mtok on both token bases (output only, input+output); the service's own first."""

    basis: str
    output: cost.Economics | None
    total: cost.Economics | None

    @property
    def primary(self) -> cost.Economics | None:
        return self.total if self.basis == Service.TokenBasis.TOTAL else self.output


def economics_view(service: Service, baseline: Baseline | None) -> EconomicsView:
    if baseline is None:
        return EconomicsView(service.token_basis, None, None)
    return EconomicsView(
        service.token_basis,
        baseline.economics(service, Service.TokenBasis.OUTPUT),
        baseline.economics(service, Service.TokenBasis.TOTAL),
    )


class LatencyCell(NamedTuple):
    p: str  # "p99"
    value: float | None  # ms
    enough: bool  # enough requests for this percentile to be a measurement
    # Why the figure is withheld or marked, as pages say it ("" when it stands):
    # "needs at least 1,000 requests; this run has 300".
    why: str = ""


@dataclass(frozen=True)
class LatencyRow:
    metric: str
    label: str
    cells: list[LatencyCell]

    @property
    def marked(self) -> bool:
        """Whether a figure it shows rests on too few requests (and so carries the mark)."""
        return any(c.value is not None and not c.enough for c in self.cells)


class LatencyTable(list[LatencyRow]):
    """A run's latency rows, and the notes saying why a percentile is withheld or marked."""

    @property
    def notes(self) -> list[str]:
        """One per percentile short of requests: "P999 needs at least 1,000
        requests; this run has 300" (the same in every row, so said once)."""
        said = {}
        for row in self:
            for c in row.cells:
                if not c.enough:
                    said.setdefault(c.p, f"{c.p.upper()} {c.why}")
        return list(said.values())


def latency_table(run: MeasuredRun) -> LatencyTable:
    labels = {"e2e": "End-to-end", "ttft": "TTFT (first token)", "tpot": "TPOT (per output token)"}
    rows = LatencyTable()
    for metric in LATENCY_METRICS:
        cells = []
        for p in PERCENTILES:
            # The one minimum-count rule (pages, gate and alerts alike).
            need = minimum_count(QUANTILE_OF[p])
            enough = run.request_count is None or run.request_count >= need
            why = (
                ""
                if enough
                else f"needs at least {need:,} requests; this run has {run.request_count:,}"
            )
            cells.append(LatencyCell(p, run.latency(metric, p), enough, why))
        rows.append(LatencyRow(metric, labels[metric], cells))
    return rows


@dataclass
class Dossier:
    """Everything the dossier and onboarding pages show, read in a fixed number of queries."""

    service: Service
    can_edit: bool
    narrative: NarrativeRevision | None
    revisions: list[NarrativeRevision]
    baseline: Baseline | None
    baselines: list[Baseline]
    slo: list[SloCheck]
    economics: EconomicsView
    latency: list[LatencyRow]
    bottlenecks: list[Bottleneck]
    experiments: list[Experiment]
    config: ConfigVersion | None
    previous_config: ConfigVersion | None
    bottleneck_groups: list[tuple[str, list[Bottleneck]]] = field(default_factory=list)
    # Where the current baseline was measured (e.g. its load test), from `provenance`.
    baseline_measured_by: list[provenance.Link] = field(default_factory=list)

    @property
    def unlisted_slo_targets(self) -> list[SloCheck]:
        """The P99 settings the listed SLOs leave out or contradict: the SLO list names them so
        the two notions of the service's SLO never disagree unseen."""
        return [c for c in self.slo if c.agreement in ("not listed", "differs")]

    @property
    def config_json(self) -> str:
        return json.dumps(self.config.config, indent=2, sort_keys=True) if self.config else ""

    @property
    def config_diff(self) -> list[str]:
        return self.config.diff_from(self.previous_config) if self.config else []

    @property
    def open_bottlenecks(self) -> list[Bottleneck]:
        return [b for b in self.bottlenecks if b.is_open]


def dossier(service: Service, *, user) -> Dossier:
    """Read one service's dossier. `service` should come with its team selected."""
    revisions = list(service.revisions.select_related("author").defer("body")[:50])
    narrative = current_narrative(service)
    baselines = list(service.baselines.select_related("config_version"))
    baseline = next((b for b in baselines if b.is_current), None)
    bottlenecks = list(
        service.bottlenecks.prefetch_related(
            Prefetch("evidence_baselines", queryset=Baseline.objects.only("pk", "label"))
        )
    )
    experiments = list(
        service.experiments.select_related(
            "before__config_version", "after__config_version", "created_by"
        )
    )
    links = provenance.experiment_links(service, experiments)
    for experiment in experiments:
        experiment.links = links.get(experiment.pk, [])
    config = service.config_versions.filter(is_current=True).select_related("author").first()
    previous = None
    if config is not None:
        previous = (
            service.config_versions.filter(version__lt=config.version).order_by("-version").first()
        )
    return Dossier(
        service=service,
        can_edit=service.can_edit(user),
        narrative=narrative,
        revisions=revisions,
        baseline=baseline,
        baselines=baselines,
        slo=slo_checks(service, baseline),
        economics=economics_view(service, baseline),
        latency=latency_table(baseline) if baseline else [],
        bottlenecks=[b for _, items in bottleneck_groups(bottlenecks) for b in items],
        experiments=experiments,
        config=config,
        previous_config=previous,
        bottleneck_groups=bottleneck_groups(bottlenecks),
        baseline_measured_by=(
            provenance.baseline_links([baseline]).get(baseline.pk, []) if baseline else []
        ),
    )


def revision_pair(
    service: Service, a: str | None, b: str | None
) -> tuple[NarrativeRevision | None, NarrativeRevision | None]:
    """The two revisions to diff: numbers from the query string, else the newest two."""
    return _pair(service.revisions.all(), "number", a, b)


def config_pair(
    service: Service, a: str | None, b: str | None
) -> tuple[ConfigVersion | None, ConfigVersion | None]:
    return _pair(service.config_versions.all(), "version", a, b)


def _pair(queryset, field_name: str, a: str | None, b: str | None):
    def number(raw: str | None) -> int | None:
        try:
            return int(raw) if raw not in (None, "") else None
        except ValueError:
            return None

    na, nb = number(a), number(b)
    if na is None or nb is None:
        newest = list(queryset.order_by(f"-{field_name}")[:2])
        if nb is None:
            nb = getattr(newest[0], field_name) if newest else None
        if na is None:
            na = getattr(newest[1], field_name) if len(newest) > 1 else nb
    found = {
        getattr(obj, field_name): obj for obj in queryset.filter(**{f"{field_name}__in": [na, nb]})
    }
    return found.get(na), found.get(nb)


# --- Load tests, gate runs and fleet economics (issue 4) -------------------------------------


def gate_runs_for_service(
    service: Service, start: datetime | None = None, end: datetime | None = None
) -> QuerySet:
    """The service's release-gate runs, newest first, within [start, end) when given.

    For the dossier timeline: each row has `verdict`, `created_at`, `candidate`, `baseline`,
    `result["summary"]` (absent when refused: `reasons` then) and `get_absolute_url()`.
    """
    runs = service.gate_runs.select_related(
        "service", "candidate__service", "baseline__service"
    ).defer("table", "candidate__extra")
    if start is not None:
        runs = runs.filter(created_at__gte=start)
    if end is not None:
        runs = runs.filter(created_at__lt=end)
    return runs


# --- How fresh each section is ---------------------------------------------------------------


@dataclass(frozen=True)
class Freshness:
    """When each part of the dossier was last true: the reader weighs a claim by its age."""

    now: datetime
    stale_after_days: int
    baseline_measured_at: datetime | None
    narrative_revised_at: datetime | None
    config_at: datetime | None

    @property
    def baseline_age_days(self) -> int | None:
        if self.baseline_measured_at is None:
            return None
        return (self.now - self.baseline_measured_at).days

    @property
    def baseline_stale(self) -> bool:
        if self.baseline_measured_at is None:
            return False
        return claims.is_stale(
            self.baseline_measured_at, self.now, timedelta(days=self.stale_after_days)
        )


def freshness(d: Dossier, *, now: datetime) -> Freshness:
    """Each section's age from what the dossier already read (no query)."""
    return Freshness(
        now=now,
        stale_after_days=int(getattr(settings, "PERFHUB_BASELINE_STALE_DAYS", 90)),
        baseline_measured_at=d.baseline.measured_at if d.baseline else None,
        narrative_revised_at=d.narrative.created_at if d.narrative else None,
        config_at=d.config.created_at if d.config else None,
    )
