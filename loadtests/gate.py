"""The release gate over stored runs: which baseline a candidate meets, and the stored verdict.

The comparison itself is `analysis.gate` (per-row tests, Holm across rows, thresholds and
floors). This module picks the baseline set of the candidates' workload shape (the newest
`BASELINE_WINDOW` baselines of that shape), feeds the gate per-request samples rebuilt from
stored sketches, applies the service's overrides and keeps every run as a GateRun.

Samples from sketches: a load test keeps its per-request arrays only as DDSketches, so the
tests get each bin's representative value repeated by the bin's count. Every value is then
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


# --- Choosing the baseline set ----------------------------------------------------------------

BASELINE_WINDOW = 5  # the newest accepted runs of a workload shape that form the reference


@dataclass(frozen=True)
class Match:
    candidates: tuple[LoadTest, ...]  # the runs judged (repeats), all of the baseline's shape
    baselines: tuple[Baseline, ...]  # the reference set, current (or newest) first
    reasons: tuple[str, ...]  # why no baseline fits; empty when one does

    @property
    def candidate(self) -> LoadTest:
        return self.candidates[0]

    @property
    def baseline(self) -> Baseline | None:
        return self.baselines[0] if self.baselines else None


def _baselines(service: Service) -> list[Baseline]:
    """Current first, then newest first."""
    found = list(
        service.baselines.select_related("source_load_test")
        # A baseline promoted from a failed run (before failures were recognised) is no reference.
        .exclude(source_load_test__failure__gt="")
        # Candidates are load-test files (client-side): a baseline recorded from the engine's
        # histograms measured something else and is never their reference.
        .filter(vantage="client")
        .order_by("-measured_at", "-pk")
    )
    return sorted(found, key=lambda b: not b.is_current)


def match_baselines(
    files: Sequence[Sequence[LoadTest]],
    baselines: Sequence[Baseline],
    *,
    window: int = BASELINE_WINDOW,
) -> Match:
    """The candidate runs and the baseline set they are judged against.

    The shape is the current baseline's when a candidate run has it, else the newest baseline's
    that one has. The reference set is the `window` newest baselines of that shape (the accepted
    history, or several runs promoted together); the candidates are every run of that shape in
    the files (repeats), and each file must hold one. A run that is in both sets (an identical
    rerun) leaves the reference set unless it is all there is. When nothing fits, the reasons
    say how the first run differs from the current baseline.
    """
    runs = [run for file_runs in files for run in file_runs]
    first = runs[0]
    if not baselines:
        return Match((first,), (), ("the service has no baseline to compare with",))
    for anchor in baselines:  # current first, then newest
        shape = shape_of(anchor)
        if not any(not gate.shape_differences(shape, shape_of(run)) for run in runs):
            continue
        missing = [
            number
            for number, file_runs in enumerate(files, start=1)
            if all(gate.shape_differences(shape, shape_of(run)) for run in file_runs)
        ]
        if missing:
            numbers = ", ".join(str(n) for n in missing)
            return Match(
                (first,),
                (),
                (
                    f"candidate file{'s' if len(missing) > 1 else ''} {numbers} hold no run of "
                    f"the baseline's workload shape ({shape_text(shape)}): repeats must share "
                    "one shape",
                ),
            )
        candidates: dict[int, LoadTest] = {}
        for run in runs:
            if not gate.shape_differences(shape, shape_of(run)):
                candidates.setdefault(run.pk, run)
        same_shape = [b for b in baselines if not gate.shape_differences(shape, shape_of(b))]
        reference = [b for b in same_shape if _source_pk(b) not in candidates] or same_shape
        return Match(tuple(candidates.values()), tuple(reference[:window]), ())
    current = baselines[0]
    reasons = gate.shape_differences(shape_of(current), shape_of(first))
    label = "current baseline" if current.is_current else "newest baseline"
    intro = (
        f"no baseline has the candidate's workload shape ({shape_text(shape_of(first))}); "
        f"the {label} “{current.label}” is {shape_text(shape_of(current))}"
    )
    return Match((first,), (), (intro, *reasons))


def match_baseline(candidates: Sequence[LoadTest], baselines: Sequence[Baseline]) -> Match:
    """One file's runs against the baselines (see `match_baselines`)."""
    return match_baselines([candidates], baselines)


def _source_pk(baseline: Baseline) -> int | None:
    run = source_run(baseline)
    return run.pk if run is not None else None


def run_data(run: LoadTest | Baseline) -> gate.RunData:
    """What the gate needs of a stored run: values, per-request samples, how it was loaded."""
    shape = shape_of(run)
    closed_loop = shape.request_rate is not None and math.isinf(shape.request_rate)
    mean, std = run.output_tokens_mean, run.output_tokens_std
    return gate.RunData(
        values=measured_values(run),
        samples=samples_of(run),
        requests=run.request_count,
        concurrency=shape.concurrency if closed_loop else None,
        output_tokens_cv=std / mean if mean and std is not None else None,
    )


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
    files: Sequence[tuple[bytes, str | None]] | None = None,
    format: str | None = None,
    user=None,
    measured_at=None,
    ci_token: CIToken | None = None,
) -> GateRun:
    """Judge candidate runs against the baseline set of their shape and store the GateRun.

    The candidates are a stored load test, one file (`candidate_content`, `filename`), or several
    files (`files`: (content, filename) pairs, the repeats of one build). Refusals (no baseline,
    another workload shape, nothing measured by both) are stored too, with verdict "refused" and
    the reasons. A bad file or bad overrides raise LoadTestImportError / GateInputError and store
    nothing.
    """
    given = [candidate is not None, candidate_content is not None, bool(files)]
    if sum(given) != 1:
        raise ValueError("pass exactly one of candidate, candidate_content and files")
    rules = service_rules(service)
    if candidate is not None:
        per_file = [[candidate]]
    else:
        uploads = files or [(candidate_content, filename)]
        per_file = []
        for number, (content, name) in enumerate(uploads, start=1):
            try:
                per_file.append(
                    import_loadtest_file(
                        service=service,
                        content=content,
                        filename=name,
                        format=format,
                        user=user,
                        origin=LoadTest.Origin.GATE,
                        measured_at=measured_at,
                        ci_token=ci_token,
                    )
                )
            except LoadTestImportError as exc:
                if len(uploads) == 1:
                    raise
                label = name or f"file {number}"
                raise LoadTestImportError(f"{label}: {exc}") from exc
    created_by = user if getattr(user, "pk", None) else None
    for runs in per_file:
        if not any(not run.failed for run in runs):
            # A run without one successful request has no statistics to judge.
            first = runs[0]
            reason = f"the candidate run failed ({first.failure}): there is nothing to compare"
            return _refuse(
                service, Match((first,), (), ()), (reason,), source, created_by, ci_token
            )
    usable = [[run for run in runs if not run.failed] for runs in per_file]
    match = match_baselines(usable, _baselines(service))
    if not match.baselines:
        return _refuse(service, match, match.reasons, source, created_by, ci_token)
    try:
        result = gate.compare_runs(
            [run_data(b) for b in match.baselines],
            [run_data(c) for c in match.candidates],
            rules=rules,
        )
    except ValueError as exc:
        return _refuse(service, match, (str(exc),), source, created_by, ci_token)
    gate_run = GateRun.objects.create(
        service=service,
        candidate=match.candidate,
        baseline=match.baseline,
        verdict=GateRun.Verdict.PASS if result.passed else GateRun.Verdict.REGRESSION,
        result=result.to_dict(),
        table=_heading(match) + gate.format_table(result),
        source=source,
        created_by=created_by,
        ci_token=ci_token,
    )
    gate_run.candidates.set(match.candidates)
    gate_run.baseline_set.set(match.baselines)
    return gate_run


def _heading(match: Match) -> str:
    lines = []
    for number, baseline in enumerate(match.baselines, start=1):
        title = "baseline: " if number == 1 else "          "
        lines.append(
            f"{title} {baseline.label} (#{baseline.pk}, measured "
            f"{baseline.measured_at:%Y-%m-%d}{', current' if baseline.is_current else ''})"
        )
    for number, candidate in enumerate(match.candidates, start=1):
        title = "candidate:" if number == 1 else "          "
        lines.append(f"{title} {candidate.label} (load test #{candidate.pk})")
    lines.append(f"shape:     {shape_text(shape_of(match.candidate))}")
    return "\n".join(lines) + "\n\n"


def _refuse(
    service: Service,
    match: Match,
    reasons: Sequence[str],
    source: str,
    created_by,
    ci_token: CIToken | None,
) -> GateRun:
    table = "REFUSED: the candidate is not compared.\n" + "\n".join(f"- {r}" for r in reasons)
    gate_run = GateRun.objects.create(
        service=service,
        candidate=match.candidate,
        baseline=match.baseline,
        verdict=GateRun.Verdict.REFUSED,
        result={"reasons": list(reasons)},
        table=table,
        source=source,
        created_by=created_by,
        ci_token=ci_token,
    )
    gate_run.candidates.set(match.candidates)
    gate_run.baseline_set.set(match.baselines)
    return gate_run
