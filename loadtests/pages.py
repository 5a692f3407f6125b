"""Reads that feed the load-test pages (the dossier's own selectors stay in dossiers.selectors)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import FieldDoesNotExist
from django.db.models import Count, F, Prefetch, Q

from dossiers.models import Baseline, Service
from dossiers.selectors import EconomicsView, economics_view
from loadtests import configuration
from loadtests.formats import FIELD_NAMES
from loadtests.models import CIToken, GateRun, LoadTest, LoadTestSketch
from loadtests.sweeps import (
    SweetSpot,
    configuration_of,
    group_sweeps,
    runs_for_sweeps,
    sweet_spot,
)


@dataclass(frozen=True)
class LoadTestRow:
    run: LoadTest
    economics: EconomicsView
    baseline: Baseline | None  # the baseline promoted from this run, if any
    other_model: str | None = None  # the model the file names, when not the service's


@dataclass(frozen=True)
class LoadTestsPage:
    rows: list[LoadTestRow]
    sweeps: list[SweetSpot]
    baselines: list[tuple[Baseline, EconomicsView]]


def load_tests_page(service: Service) -> LoadTestsPage:
    """Every load test with its economics, the sweeps with their sweet spots, and the economics
    of every baseline: three queries whatever the number of runs."""
    runs = runs_for_sweeps(service)
    baselines = list(service.baselines.all())
    by_id = {b.pk: b for b in baselines}
    promoted = {r.pk: by_id.get(r.promoted_to_id) for r in runs if r.promoted_to_id}
    rows = [
        LoadTestRow(
            r,
            economics_view(service, r),
            promoted.get(r.pk),
            configuration.other_model(configuration_of(r), service.model_name),
        )
        for r in runs
    ]
    spots = [sweet_spot(sweep, service) for sweep in group_sweeps(runs)]
    return LoadTestsPage(
        rows=rows,
        sweeps=spots,
        baselines=[(b, economics_view(service, b)) for b in baselines],
    )


def run_other_model(service: Service, run: LoadTest) -> str | None:
    """The model the run's file names, when not the service's (`configuration.other_model`)."""
    recorded = configuration.configuration(run.extra or {})
    return configuration.other_model(recorded, service.model_name)


def load_test_for_page(service: Service, pk: int) -> LoadTest:
    return (
        LoadTest.objects.filter(service=service)
        .select_related("imported_by")
        .prefetch_related(Prefetch("sketches", queryset=LoadTestSketch.objects.defer("sketch")))
        .get(pk=pk)
    )


@dataclass(frozen=True)
class SourceRow:
    field: str  # the column's name, as the page shows it
    value: str
    source: str  # the file's key, and how the number was derived from it


def source_rows(run: LoadTest) -> list[SourceRow]:
    """For each number imported from the file, the key it was read from (extra["sources"]),
    so a reader can check it against the file. Fields absent from the file have no row."""
    sources = (run.extra or {}).get("sources") or {}
    # jsonb keeps no key order: show them in the order of the page's tables.
    order = ["measured_at", *FIELD_NAMES[: FIELD_NAMES.index("output_tps") + 1], "errors"]
    order += [name for name in FIELD_NAMES if name not in order]
    rank = {name: index for index, name in enumerate(order)}
    rows = []
    for name, source in sorted(sources.items(), key=lambda item: rank.get(item[0], len(rank))):
        if name == "errors":
            label, value = "failed requests", run.errors
        elif name == "measured_at":
            label, value = "measured at", run.measured_at
        else:
            try:
                label = LoadTest._meta.get_field(name).verbose_name
            except FieldDoesNotExist:
                continue
            value = getattr(run, name)
        if value is None:
            continue
        rows.append(SourceRow(str(label), _shown(value), str(source)))
    return rows


def _shown(value) -> str:
    if isinstance(value, datetime):
        return f"{value:%Y-%m-%d %H:%M:%S} UTC"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return str(value)


def gate_runs_page(service: Service, *, limit: int = 200) -> list[GateRun]:
    """The newest gate runs, each with `baselines` (how many runs its reference set held) and
    `repeats` (how many candidate runs), counted in the same query."""
    return list(
        service.gate_runs.select_related(
            "service", "candidate__service", "baseline__service", "created_by"
        )
        .annotate(
            baselines=Count("baseline_set", distinct=True),
            repeats=Count("candidates", distinct=True),
        )
        .order_by("-created_at", "-pk")  # a GROUP BY query drops Meta.ordering
        .defer("candidate__extra", "table")[:limit]
    )


def ci_tokens_query(service: Service):
    """The CI tokens that reach `service`: its own, and its team's team-wide ones."""
    return CIToken.objects.filter(team_id=service.team_id).filter(
        Q(service=service) | Q(service__isnull=True)
    )


def ci_tokens_for(service: Service) -> list[CIToken]:
    """Active first, newest first; one query."""
    return list(
        ci_tokens_query(service)
        .select_related("team", "service", "created_by")
        .order_by(F("revoked_at").desc(nulls_first=True), "-created_at")
    )
