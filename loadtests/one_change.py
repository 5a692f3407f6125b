"""Sweeps one parameter apart: an experiment already measured.

`vllm bench sweep serve` starts the server once per setting of its parameters and measures each
at the same loads. Two of its sweeps whose parameters differ in exactly one (`max_num_seqs` 1
and 4), with the same model, serving stack, workload and tool, are what the dossier calls an
experiment: one variable changed, before and after measured. At every load both sweeps measured,
the pair of runs can be recorded as one (`record_experiment`): both runs become baselines of the
service (not the current one) and the experiment, pending, links them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.db.models import Q, QuerySet

from analysis import gate
from dossiers import services
from dossiers.models import Experiment, Service
from loadtests import configuration
from loadtests.gate import run_data, service_rules
from loadtests.importing import baseline_of_run
from loadtests.models import LoadTest
from loadtests.sweeps import CONCURRENCY, Sweep, same_workload, sweeps_for_service

# Experiment's field lengths (a longer parameter value is cut, the runs keep it whole).
KEY_LENGTH = 120
VALUE_LENGTH = 200


class ExperimentFromRunsError(ValueError):
    """The two runs are not one parameter apart at one load; the message says why."""


@dataclass(frozen=True)
class LoadPair:
    """One load measured by both sweeps: the run that stands for it before the change and
    after, and every run measured there on each side (repeats included), newest first."""

    x: float
    before: LoadTest
    after: LoadTest
    before_runs: tuple[LoadTest, ...]
    after_runs: tuple[LoadTest, ...]


@dataclass(frozen=True)
class OneChange:
    """`other` is `sweep` with one parameter changed: `key` from `before_value` (in `other`)
    to `after_value` (in `sweep`)."""

    sweep: Sweep
    other: Sweep
    key: str
    before_value: str
    after_value: str
    pairs: tuple[LoadPair, ...]

    @property
    def label(self) -> str:
        return f"{self.key} {self.before_value} → {self.after_value}"


def load_label(sweep: Sweep, x: float) -> str:
    return f"concurrency {x:g}" if sweep.axis == CONCURRENCY else f"{x:g} req/s"


def one_change(before: Sweep, after: Sweep) -> OneChange | None:
    """How `after` differs from `before`, when that is one parameter and nothing else."""
    if before is after or (before.format, before.client, before.axis, before.fixed) != (
        after.format,
        after.client,
        after.axis,
        after.fixed,
    ):
        return None
    if not configuration.same_model_and_stack(before.configuration, after.configuration):
        return None
    change = configuration.one_change(before.parameters, after.parameters)
    if change is None or not same_workload(before.runs[0], after.runs[0]):
        return None
    at_before = {before.x(run): run for run in before.runs}
    pairs = tuple(
        LoadPair(
            x=after.x(run),
            before=at_before[after.x(run)],
            after=run,
            before_runs=_runs_at(before, after.x(run)),
            after_runs=_runs_at(after, after.x(run)),
        )
        for run in after.runs
        if after.x(run) in at_before
    )
    return OneChange(after, before, *change, pairs=pairs)


def _runs_at(sweep: Sweep, x: float) -> tuple[LoadTest, ...]:
    runs = [run for run in sweep.every_run if sweep.x(run) == x]
    return tuple(sorted(runs, key=lambda r: (r.measured_at, r.pk), reverse=True))


def pair_of(
    before: LoadTest, after: LoadTest, *, sweeps: list[Sweep] | None = None
) -> tuple[OneChange, LoadPair]:
    """The change and the load pair the two runs stand for, or ExperimentFromRunsError saying
    why they are not one. `sweeps`: the service's, when the caller already grouped them."""
    if before.service_id != after.service_id:
        raise ExperimentFromRunsError("the two runs belong to different services")
    change = _change_between(before, after, sweeps)
    if change is None:
        raise ExperimentFromRunsError(
            f"“{before.label}” and “{after.label}” are not runs of two sweeps that differ "
            "in one parameter and nothing else"
        )
    pair = next((p for p in change.pairs if (p.before, p.after) == (before, after)), None)
    if pair is None:
        raise ExperimentFromRunsError(
            f"“{before.label}” and “{after.label}” were not measured at the same load "
            "(or a newer run stands for that load in its sweep)"
        )
    return change, pair


def compare(pair: LoadPair) -> gate.GateResult:
    """The release gate's comparison of the load's runs: before as the baseline set, after as
    the candidates (repeats measure the run-to-run noise). A row that regresses got worse
    beyond that noise at the gate's false-alarm budget; an improvement is a change with its
    interval. ValueError when no gated metric is measured on both sides."""
    rules = service_rules(pair.after.service)
    return gate.compare_runs(
        [run_data(run) for run in pair.before_runs],
        [run_data(run) for run in pair.after_runs],
        rules=rules,
    )


def recorded_experiment(pair: LoadPair) -> Experiment | None:
    """The experiment the pair's two runs were recorded as, if they were."""
    return Experiment.objects.filter(
        before__source_load_test=pair.before, after__source_load_test=pair.after
    ).first()


def changes_into(sweep: Sweep, sweeps: list[Sweep]) -> list[OneChange]:
    """The other sweeps of the service that `sweep` is one parameter away from, as changes
    *into* `sweep` (it is the after), by parameter then value."""
    found = [c for other in sweeps if (c := one_change(other, sweep)) is not None]
    return sorted(found, key=lambda c: (c.key, c.before_value))


@transaction.atomic
def record_experiment(
    *, before: LoadTest, after: LoadTest, user=None, recorded_by: str = "", target: str = ""
) -> tuple[Experiment, bool]:
    """Record the two runs as an experiment of their service (pending: the team judges it);
    (experiment, created). Recording the same pair again returns the first experiment.
    `recorded_by`: the machine credential that asked, when no person did (its notes say so).
    `target`: the figure it aims to move (blank: not stated); refused (ValidationError, by
    the model) when the two runs did not both measure it.

    Refuses (ExperimentFromRunsError) runs of two services, runs that are not at one load of
    two sweeps one parameter apart, and (PromotionError) runs that cannot be baselines."""
    # Two clicks at once record one experiment: the second waits here, then finds the first's.
    locked = LoadTest.objects.select_for_update().filter(pk__in=[before.pk, after.pk])
    by_pk = {run.pk: run for run in locked.order_by("pk")}
    before, after = by_pk[before.pk], by_pk[after.pk]
    change, pair = pair_of(before, after)
    before_baseline = baseline_of_run(load_test=before, user=user)
    after_baseline = baseline_of_run(load_test=after, user=user)
    existing = Experiment.objects.filter(before=before_baseline, after=after_baseline).first()
    if existing is not None:
        return existing, False
    at = load_label(change.sweep, pair.x)
    experiment = services.experiment_record(
        service=before.service,
        created_by=user if getattr(user, "pk", None) else None,
        title=_cut(f"{change.label} at {at}", 200),
        hypothesis=(
            f"{change.key} = {change.after_value} instead of {change.before_value}, with the "
            f"model, workload, load ({at}) and every other recorded parameter unchanged. "
            "(Recorded from two sweeps; say what the change was expected to do.)"
        ),
        target=target,
        variable_key=_cut(change.key, KEY_LENGTH),
        value_from=_cut(change.before_value, VALUE_LENGTH),
        value_to=_cut(change.after_value, VALUE_LENGTH),
        before=before_baseline,
        after=after_baseline,
        run_on=after.measured_at.date(),
        notes=(
            f"Measured by {after.format}: before “{before.label}”, after “{after.label}” "
            f"({change.other.title}; {change.sweep.title})."
            + (f" Recorded through the API by {recorded_by}." if recorded_by else "")
            + f"\n\n{gate_reading(pair)}"
        ),
    )
    return experiment, True


def gate_reading(pair: LoadPair) -> str:
    """What the release gate said of the load's runs, as the experiment records it when it is
    made: the runs may later be joined by repeats, the notes keep what was known then."""
    try:
        return gate.experiment_reading(compare(pair))
    except ValueError as exc:  # no gated figure measured on both sides
        return f"The release gate could not compare the runs. {exc}"


def _change_between(
    before: LoadTest, after: LoadTest, sweeps: list[Sweep] | None
) -> OneChange | None:
    if sweeps is None:
        sweeps = sweeps_for_service(after.service)
    into = next((s for s in sweeps if after.pk in s.run_pks), None)
    out_of = next((s for s in sweeps if before.pk in s.run_pks), None)
    if into is None or out_of is None:
        return None
    return one_change(out_of, into)


def _cut(text: str, length: int) -> str:
    return text if len(text) <= length else text[: length - 1] + "…"


def experiments_of(
    service: Service,
    *,
    verdict: str | None = None,
    run: int | None = None,
    created_after: datetime | None = None,
    changed_after: datetime | None = None,
) -> QuerySet[Experiment]:
    """The service's experiments, newest first, with the runs their baselines came from;
    only those of `verdict`, only those run `run` (a load test id) is the before or after of,
    only those recorded after `created_after`, only those saved after `changed_after`."""
    experiments = service.experiments.select_related(
        "before__source_load_test", "after__source_load_test"
    )
    if verdict:
        experiments = experiments.filter(verdict=verdict)
    if run:
        experiments = experiments.filter(
            Q(before__source_load_test=run) | Q(after__source_load_test=run)
        )
    if created_after is not None:
        experiments = experiments.filter(created_at__gt=created_after)
    if changed_after is not None:
        experiments = experiments.filter(updated_at__gt=changed_after)
    return experiments
