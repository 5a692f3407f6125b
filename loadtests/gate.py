"""The release gate over stored runs: which baseline a candidate meets, and the stored verdict.

The comparison itself is `analysis.gate` (thresholds, floors, bootstrap on quantile ratios).
This module picks the baseline of the candidate's workload shape, feeds it per-request samples
rebuilt from stored sketches, applies the service's overrides and keeps every run as a GateRun.

Samples from sketches: a load test keeps its per-request arrays only as DDSketches, so the
bootstrap gets each bin's representative value repeated by the bin's count. Every value is then
within the sketch's 1.08% relative accuracy of a real request, the quantiles are the sketch's
own, and the same sketch always yields the same samples (an identical rerun compares equal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from ddsketch import DDSketch
from django.db import transaction

from analysis import gate, sketches
from dossiers.models import Baseline, Service
from loadtests.importing import (
    LoadTestImportError,
    import_loadtest_file,
    measured_values,
)
from loadtests.models import CIToken, GateRun, LoadTest, source_run

SAMPLE_FAMILIES = ("ttft", "tpot", "e2e")


class GateInputError(LoadTestImportError):
    """Bad input for the gate that is not the file's fault (e.g. malformed overrides)."""


# --- Shapes and samples ---------------------------------------------------------------------


def shape_of(run: LoadTest | Baseline) -> gate.WorkloadShape:
    """The workload a run applied; a promoted baseline takes its load test's (rate inf known)."""
    if isinstance(run, Baseline):
        run = source_run(run) or run
    rate = run.request_rate
    if isinstance(run, LoadTest) and run.request_rate_inf:
        rate = math.inf
    return gate.WorkloadShape(
        concurrency=run.concurrency,
        request_rate=rate,
        prompt_tokens_mean=run.prompt_tokens_mean,
        output_tokens_mean=run.output_tokens_mean,
    )


def shape_text(shape: gate.WorkloadShape) -> str:
    parts = []
    if shape.concurrency is not None:
        parts.append(f"concurrency {shape.concurrency}")
    if shape.request_rate is not None:
        rate = "unlimited" if math.isinf(shape.request_rate) else f"{shape.request_rate:g} req/s"
        parts.append(f"rate {rate}")
    if shape.prompt_tokens_mean is not None:
        parts.append(f"prompt ~{shape.prompt_tokens_mean:.0f} tokens")
    if shape.output_tokens_mean is not None:
        parts.append(f"output ~{shape.output_tokens_mean:.0f} tokens")
    return ", ".join(parts) or "not recorded"


def approximate_values(sketch: DDSketch) -> np.ndarray:
    """Per-request values rebuilt from a sketch: each bin's value, repeated by its count."""
    mapping = sketch._mapping
    store = sketch._store
    values: list[np.ndarray] = []
    if sketch._zero_count:
        values.append(np.zeros(round(sketch._zero_count)))
    if store.count:
        start = store.min_key - store.offset
        bins = store.bins[start : start + store.max_key - store.min_key + 1]
        for key, count in enumerate(bins, start=store.min_key):
            if count:
                values.append(np.full(round(count), mapping.value(key)))
    if not values:
        return np.array([], dtype=float)
    # Bin values may fall a hair outside the exact extremes the sketch keeps.
    return np.clip(np.concatenate(values), sketch._min, sketch._max)


def samples_of(run: LoadTest | Baseline | None) -> dict[str, np.ndarray]:
    """Approximate per-request ms by family, from the (source) load test's sketches."""
    if isinstance(run, Baseline):
        run = source_run(run)
    if run is None:
        return {}
    return {
        row.family: approximate_values(sketches.loads(bytes(row.sketch)))
        for row in run.sketches.all()
        if row.family in SAMPLE_FAMILIES and row.count
    }


# --- Choosing the baseline --------------------------------------------------------------------


@dataclass(frozen=True)
class Match:
    candidate: LoadTest
    baseline: Baseline | None
    reasons: tuple[str, ...]  # why no baseline fits; empty when one does


def _baselines(service: Service) -> list[Baseline]:
    """Current first, then newest first."""
    found = list(
        service.baselines.select_related("source_load_test")
        # A baseline promoted from a failed run (before failures were recognised) is no reference.
        .exclude(source_load_test__failure__gt="")
        .order_by("-measured_at", "-pk")
    )
    return sorted(found, key=lambda b: not b.is_current)


def match_baseline(candidates: Sequence[LoadTest], baselines: Sequence[Baseline]) -> Match:
    """The candidate run and the baseline it is judged against.

    The current baseline when its shape is the candidate's; else the newest baseline of the same
    shape. With several candidate runs (a sweep file), the first run that has such a baseline,
    runs matching the current baseline first. When none fits, the reasons say how the first run
    differs from the current baseline.
    """
    first = candidates[0]
    if not baselines:
        return Match(first, None, ("the service has no baseline to compare with",))
    shapes = [(b, shape_of(b)) for b in baselines]
    for baseline, shape in shapes:  # current first, then newest
        for candidate in candidates:
            if not gate.shape_differences(shape, shape_of(candidate)):
                return Match(candidate, baseline, ())
    current = baselines[0]
    reasons = gate.shape_differences(shape_of(current), shape_of(first))
    label = "current baseline" if current.is_current else "newest baseline"
    intro = (
        f"no baseline has the candidate's workload shape ({shape_text(shape_of(first))}); "
        f"the {label} “{current.label}” is {shape_text(shape_of(current))}"
    )
    return Match(first, None, (intro, *reasons))


# --- Running the gate ---------------------------------------------------------------------------


def service_rules(service: Service) -> dict[str, gate.MetricRule]:
    try:
        return gate.rules_with_overrides(service.gate_overrides or {})
    except (ValueError, TypeError) as exc:
        raise GateInputError(f"the service's gate overrides are invalid: {exc}") from exc


@transaction.atomic
def run_gate(
    *,
    service: Service,
    source: str,
    candidate: LoadTest | None = None,
    candidate_content: bytes | None = None,
    filename: str | None = None,
    format: str | None = None,
    user=None,
    measured_at=None,
    ci_token: CIToken | None = None,
) -> GateRun:
    """Judge a candidate (a stored load test, or a file imported here) and store the GateRun.

    Refusals (no baseline, different workload shape, nothing measured by both) are stored too,
    with verdict "refused" and the reasons. A bad file or bad overrides raise
    LoadTestImportError / GateInputError and store nothing.
    """
    if (candidate is None) == (candidate_content is None):
        raise ValueError("pass exactly one of candidate and candidate_content")
    rules = service_rules(service)
    if candidate is not None:
        candidates = [candidate]
    else:
        candidates = import_loadtest_file(
            service=service,
            content=candidate_content,
            filename=filename,
            format=format,
            user=user,
            origin=LoadTest.Origin.GATE,
            measured_at=measured_at,
            ci_token=ci_token,
        )
    created_by = user if getattr(user, "pk", None) else None
    usable = [run for run in candidates if not run.failed]
    if not usable:
        # A run without one successful request has no statistics to judge.
        first = candidates[0]
        reason = f"the candidate run failed ({first.failure}): there is nothing to compare"
        return _refuse(service, first, None, (reason,), source, created_by, ci_token)
    match = match_baseline(usable, _baselines(service))
    if match.baseline is None:
        return _refuse(service, match.candidate, None, match.reasons, source, created_by, ci_token)
    try:
        result = gate.compare(
            measured_values(match.baseline),
            measured_values(match.candidate),
            rules=rules,
            baseline_samples=samples_of(match.baseline),
            candidate_samples=samples_of(match.candidate),
        )
    except ValueError as exc:
        return _refuse(
            service, match.candidate, match.baseline, (str(exc),), source, created_by, ci_token
        )
    return GateRun.objects.create(
        service=service,
        candidate=match.candidate,
        baseline=match.baseline,
        verdict=GateRun.Verdict.PASS if result.passed else GateRun.Verdict.REGRESSION,
        result=result.to_dict(),
        table=_heading(match.baseline, match.candidate) + gate.format_table(result),
        source=source,
        created_by=created_by,
        ci_token=ci_token,
    )


def _heading(baseline: Baseline, candidate: LoadTest) -> str:
    return (
        f"baseline:  {baseline.label} (#{baseline.pk}, measured {baseline.measured_at:%Y-%m-%d})\n"
        f"candidate: {candidate.label} (load test #{candidate.pk})\n"
        f"shape:     {shape_text(shape_of(candidate))}\n\n"
    )


def _refuse(
    service: Service,
    candidate: LoadTest,
    baseline: Baseline | None,
    reasons: Sequence[str],
    source: str,
    created_by,
    ci_token: CIToken | None,
) -> GateRun:
    table = "REFUSED: the candidate is not compared.\n" + "\n".join(f"- {r}" for r in reasons)
    return GateRun.objects.create(
        service=service,
        candidate=candidate,
        baseline=baseline,
        verdict=GateRun.Verdict.REFUSED,
        result={"reasons": list(reasons)},
        table=table,
        source=source,
        created_by=created_by,
        ci_token=ci_token,
    )
