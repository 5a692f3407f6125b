"""Demo load tests: real-format result files under `demo/loadtests/<service slug>/`.

Each file goes through the same importer as an upload (`import_loadtest_file`), its format
detected from its content, so the demo shows exactly what a user's file would. Importing is
idempotent (a run is identified by the file's digest and its position in it). The 13B sweep
(`code-review-13b/demo-13b-concurrency-sweep.jsonl`, `vllm bench serve --append-result` JSON
lines) has the seed's shape: up to concurrency 16 each doubling buys x1.78 throughput for x1.04
to x1.31 P99, 16 -> 32 +20% for x1.5, 32 -> 64 +3% for x2.1 more; so the sweep page names 16.
Its end-to-end times obey Little's law (throughput x mean E2E = 96% of the slots busy).

The release gate has a history too (`add_demo_gate_runs`): the first nights of the 13B's nightly
file (`demo-13b-nightly.jsonl`, 1,000 requests a night at c=16, written by
`demo/loadtests/make_nightly.py`) are promoted together as the gate's reference set, and every
later night is judged against it, as a nightly CI job running `perf_gate` would. A thousand
requests leave ten beyond each P99, so the gate judges the P99s too. The TTFT step at night 9
fails that night's gate (+21% TTFT P50); of the nights after it (+2% to +16%), night 14 fails
again and the others pass "within noise": one night cannot tell them from the run-to-run spread
at the gate's 0.5% false-alarm budget (MDE about +20%). The load-test history page
shows the step as a change point. Promoting the set made its newest run current; a minute
later the seed's "Batch sweep: batch 16" is made current again (the dossier's figures are its).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction

from dossiers import services as dossier_services
from dossiers.models import Baseline, Experiment, Service
from loadtests.gate.run import run_gate
from loadtests.importing import import_loadtest_file, promote_load_test
from loadtests.models import GateRun, LoadTest
from loadtests.one_change import changes_into, record_experiment
from loadtests.sweeps import sweeps_for_service

DEMO_LOADTESTS = Path(settings.BASE_DIR) / "demo" / "loadtests"


def demo_files(slug: str, folder: Path = DEMO_LOADTESTS) -> list[Path]:
    """The demo's load-test files for the service `slug`, in name order."""
    directory = folder / slug
    return sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []


def add_demo_loadtests(services: Iterable[Service], folder: Path = DEMO_LOADTESTS) -> int:
    """Import the demo files of each service among `services`, then give the services of
    DEMO_GATE their gate history (`add_demo_gate_runs`); the number of runs stored."""
    services = list(services)
    runs = 0
    for service in services:
        for path in demo_files(service.slug, folder):
            runs += len(
                import_loadtest_file(
                    service=service,
                    content=path.read_bytes(),
                    filename=path.name,
                    origin=LoadTest.Origin.DEMO,
                )
            )
    add_demo_gate_runs(services)
    add_demo_experiments(services)
    return runs


@dataclass(frozen=True)
class DemoExperiment:
    """A change a service's two sweeps measured, recorded as a user would from the sweep page's
    "Record as experiment" (`record_experiment`), then judged by the team."""

    key: str  # the parameter the second sweep changed
    value: str  # its value there
    load: float  # the load to record the change at
    hypothesis: str
    verdict: str
    finding: str  # added to the notes


DEMO_EXPERIMENTS = {
    "support-chat-7b": DemoExperiment(
        key="max_num_seqs",
        value="512",
        load=16.0,
        hypothesis=(
            "Up to 512 sequences a step instead of the default lets the scheduler batch more of "
            "a burst, so the replica serves 16 req/s with lower end-to-end latency and more "
            "tokens a second."
        ),
        verdict=Experiment.Verdict.REVERTED,
        finding=(
            "At 16 req/s 512 slots made every percentile slower for the same tokens a second; "
            "at 32 req/s the two differ only in TPOT P90. One run a side, so the gate judged "
            "by its thresholds alone: back to the default, and measure repeats before trying "
            "it again."
        ),
    )
}


@transaction.atomic
def add_demo_experiments(services: Iterable[Service]) -> int:
    """Record each DEMO_EXPERIMENTS change of `services` from its two sweeps (once: recording
    again finds the first), with the team's hypothesis and verdict. Returns how many were new."""
    recorded = 0
    for service in services:
        demo = DEMO_EXPERIMENTS.get(service.slug)
        if demo is None:
            continue
        sweeps = sweeps_for_service(service)
        after = next(s for s in sweeps if s.parameters.get(demo.key) == demo.value)
        (change,) = (c for c in changes_into(after, sweeps) if c.key == demo.key)
        pair = next(p for p in change.pairs if p.x == demo.load)
        experiment, created = record_experiment(before=pair.before, after=pair.after)
        if created:
            dossier_services.experiment_update(
                experiment=experiment,
                hypothesis=demo.hypothesis,
                verdict=demo.verdict,
                notes=f"{experiment.notes}\n\n{demo.finding}",
            )
            recorded += 1
    return recorded


# service slug -> (its nightly file, how many of the first nights are the gate's reference set)
DEMO_GATE = {"code-review-13b": ("demo-13b-nightly.jsonl", 5)}
GATE_AFTER_RUN = timedelta(minutes=10)  # when the nightly job's gate step ran, after its load test
DEMO_PROMOTION_BATCH = "demo-nightly-reference"


@transaction.atomic
def add_demo_gate_runs(services: Iterable[Service]) -> int:
    """For each service of DEMO_GATE among `services` that has no gate run yet: promote the
    first nights of its nightly file together (one reference set), then run the gate on every
    later night, each dated just after its load test. The service's current baseline before
    the promotions stays current. Returns the number of gate runs stored."""
    stored = 0
    for service in services:
        if service.slug not in DEMO_GATE or GateRun.objects.filter(service=service).exists():
            continue
        filename, reference = DEMO_GATE[service.slug]
        nights = list(
            LoadTest.objects.filter(service=service, source_name=filename).order_by("measured_at")
        )
        if len(nights) <= reference:
            continue
        current = Baseline.objects.filter(service=service, is_current=True).first()
        promoted = [
            promote_load_test(load_test=night, promotion_batch=DEMO_PROMOTION_BATCH).pk
            for night in nights[:reference]
        ]
        # Promoted just after the last reference night, when the team accepted them; a minute
        # later the team made the sweep's baseline current again: the dossier's headline
        # figures (GPU busy, cost) come from it, and the nightly file carries no GPU data.
        accepted = nights[reference - 1].measured_at + GATE_AFTER_RUN
        Baseline.objects.filter(pk__in=promoted).update(promoted_at=accepted)
        if current is not None:
            dossier_services.baseline_promote(baseline=current, at=accepted + timedelta(minutes=1))
        for night in nights[reference:]:
            gate_run = run_gate(service=service, source=GateRun.Source.CLI, candidate=night)
            GateRun.objects.filter(pk=gate_run.pk).update(
                created_at=night.measured_at + GATE_AFTER_RUN
            )
            stored += 1
    return stored
