"""Diagnosis of a stored run: analysis.diagnosis over its fields; an owner confirms a proposal.

A proposal is recomputed from the run when it is confirmed (the browser only names the rule),
so the evidence stored on the Bottleneck is always what the rule saw.
"""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from analysis import diagnosis
from analysis.percentiles import minimum_count
from dossiers import services
from dossiers.models import Baseline, Bottleneck
from loadtests.models import LoadTest, source_run
from loadtests.sweeps import sweep_containing


class UnknownProposal(LookupError):
    """The rule named does not (or no longer) fire on this run."""


def observation_for(run: LoadTest | Baseline) -> diagnosis.Observation:
    """What the rules can see of a run: utilization, latency, the service's SLO, and the
    throughput of the sweep it belongs to (a load test, or a baseline promoted from one)."""
    service = run.service
    load_test = run if isinstance(run, LoadTest) else source_run(run)
    sweep_points = None
    if load_test is not None:
        sweep = sweep_containing(service, load_test.pk)
        if sweep is not None:
            sweep_points = [(sweep.x(r), r.output_tps) for r in sweep.plotted_runs]
    return diagnosis.Observation(
        gpu_util=run.gpu_util,
        sm_active=run.sm_active,
        dram_active=run.dram_active,
        e2e_p50_ms=run.e2e_p50_ms,
        e2e_p99_ms=run.e2e_p99_ms,
        ttft_p99_ms=run.ttft_p99_ms if run.vantage == "client" else None,
        engine_ttft_p99_ms=_engine_ttft_p99(run),
        e2e_slo_ms=service.slo_p99_e2e_ms,
        sweep=sweep_points,
    )


def _engine_ttft_p99(run: LoadTest | Baseline) -> float | None:
    """The engine's TTFT P99 over the run's window (its upper bucket edge: never below the
    truth), when recorded on enough requests."""
    figure = (run.server_side or {}).get("figures", {}).get("ttft_p99_ms") or {}
    if figure.get("count", 0) < minimum_count(0.99):
        return None
    return figure.get("upper") if figure.get("upper") is not None else figure.get("value")


def proposals_for(run: LoadTest | Baseline) -> list[diagnosis.Proposal]:
    return diagnosis.diagnose(observation_for(run))


def _describe(run: LoadTest | Baseline) -> str:
    kind = "baseline" if isinstance(run, Baseline) else "load test"
    return f"{kind} “{run.label}” (#{run.pk}, measured {run.measured_at:%Y-%m-%d})"


@transaction.atomic
def confirm_proposal(*, run: LoadTest | Baseline, rule: str, user=None) -> Bottleneck:
    """Record the proposal of `rule` on `run` as a confirmed Bottleneck, evidence linked.

    The evidence baseline is the baseline itself, or the baseline promoted from the load test
    (none when the load test was never promoted: the evidence text then names it).
    """
    proposal = next((p for p in proposals_for(run) if p.rule == rule), None)
    if proposal is None:
        raise UnknownProposal(f"the rule {rule!r} proposes nothing for this run")
    evidence_baseline = run if isinstance(run, Baseline) else run.promoted_to
    who = f" by {user.get_username()}" if getattr(user, "pk", None) else ""
    return services.bottleneck_record(
        service=run.service,
        evidence_baselines=[evidence_baseline] if evidence_baseline else [],
        title=proposal.title[:200],
        layer=proposal.layer,
        kind=proposal.kind,
        symptom=proposal.symptom,
        evidence=(
            f"{proposal.evidence}\n\nProposed by the diagnosis rule “{proposal.rule}” on "
            f"{_describe(run)}; confirmed{who}."
        ),
        status=Bottleneck.Status.CONFIRMED,
        identified_on=timezone.localdate(),
    )
