"""What the dossier links to from its baselines and experiments (`dossiers.provenance`): the
load test a baseline was promoted from, and, for an experiment whose two baselines are runs of
two sweeps one parameter apart at one load, that load compared through the release gate."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.urls import reverse

from dossiers import provenance
from dossiers.models import Baseline, Experiment, Service
from loadtests.models import LoadTest
from loadtests.one_change import ExperimentFromRunsError, pair_of
from loadtests.sweeps import sweeps_for_service


class LoadTestProvenance(provenance.Provenance):
    name = "loadtests"

    def for_baselines(self, baselines: Sequence[Baseline]) -> Mapping[int, provenance.Link]:
        runs = (
            LoadTest.objects.filter(promoted_to__in=[b.pk for b in baselines])
            .select_related("service")
            .only("pk", "label", "promoted_to", "service__slug")
        )
        return {
            run.promoted_to_id: provenance.Link(f"load test “{run.label}”", run.get_absolute_url())
            for run in runs
        }

    def for_experiments(
        self, service: Service, experiments: Sequence[Experiment]
    ) -> Mapping[int, provenance.Link]:
        baselines = {pk for x in experiments for pk in (x.before_id, x.after_id) if pk}
        runs = {
            run.promoted_to_id: run
            for run in LoadTest.objects.filter(service=service, promoted_to__in=baselines)
        }
        measured = [
            (x, runs[x.before_id], runs[x.after_id])
            for x in experiments
            if x.before_id in runs and x.after_id in runs
        ]
        if not measured:  # most experiments: no sweep grouping needed
            return {}
        sweeps = sweeps_for_service(service)
        found = {}
        for experiment, before, after in measured:
            try:
                pair_of(before, after, sweeps=sweeps)
            except ExperimentFromRunsError:
                continue
            found[experiment.pk] = provenance.Link(
                "Compare the runs through the gate",
                reverse("loadtests:compare_runs", args=[service.slug, after.pk, before.pk]),
            )
        return found


provenance.register(LoadTestProvenance())
