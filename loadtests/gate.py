"""The release gate over stored runs: which baseline a candidate meets, and the stored verdict.

The comparison itself is `analysis.gate` (per-row tests, Holm across rows, thresholds and
floors). This module picks the baseline set of the candidates' workload (baselines whose
fingerprint is compatible, `analysis.fingerprint`, within the anchor's regime: no config change
or step between them, at most `BASELINE_WINDOW`), feeds the gate per-request samples rebuilt
from stored sketches, applies the service's overrides, notes the lint findings of both sides
and keeps every run as a GateRun.

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

from analysis import gate, regime, sketches
from analysis.fingerprint import Fingerprint, Lengths
from analysis.fingerprint import differences as fingerprint_differences
from dossiers.models import Baseline, ConfigVersion, Service
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


def fingerprint_of(run: LoadTest | Baseline) -> Fingerprint:
    """The run's stored workload fingerprint; a run imported before fingerprints (or a baseline
    typed in by hand) gets one from its means, so it compares by the old 10% rule."""
    if isinstance(run, Baseline):
        run = source_run(run) or run
    if isinstance(run, LoadTest) and run.fingerprint:
        return Fingerprint.from_dict(run.fingerprint)
    shape = shape_of(run)

    def lengths(mean: float | None, std: float | None) -> Lengths | None:
        return None if mean is None else Lengths(mean=mean, std=std, basis="mean and std")

    return Fingerprint(
        prompt=lengths(shape.prompt_tokens_mean, run.prompt_tokens_std),
        output=lengths(shape.output_tokens_mean, run.output_tokens_std),
        concurrency=shape.concurrency,
        request_rate=shape.request_rate,
    )


def workload_differences(base: LoadTest | Baseline, cand: LoadTest | Baseline) -> list[str]:
    """Why two runs did not apply the same workload (empty: comparable), by fingerprint."""
    return fingerprint_differences(fingerprint_of(base), fingerprint_of(cand))


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
    regime: bool = True,
) -> Match:
    """The candidate runs and the baseline set they are judged against.

    The workload is the current baseline's when a candidate run's fingerprint is compatible
    with it, else the newest compatible baseline's. The reference set is that anchor and the
    newer-than-a-regime-change baselines of the same fingerprint (`regime_set`), at most
    `window`; the candidates are every compatible run in the files (repeats), and each file must
    hold one. A run that is in both sets (an identical rerun) leaves the reference set unless
    it is all there is. When nothing fits, the reasons name how the first run's workload
    differs from the current baseline's.
    """
    runs = [run for file_runs in files for run in file_runs]
    first = runs[0]
    if not baselines:
        return Match((first,), (), ("the service has no baseline to compare with",))
    for anchor in baselines:  # current first, then newest
        if not any(not workload_differences(anchor, run) for run in runs):
            continue
        missing = [
            number
            for number, file_runs in enumerate(files, start=1)
            if all(workload_differences(anchor, run) for run in file_runs)
        ]
        if missing:
            numbers = ", ".join(str(n) for n in missing)
            return Match(
                (first,),
                (),
                (
                    f"candidate file{'s' if len(missing) > 1 else ''} {numbers} hold no run of "
                    f"the baseline's workload shape ({fingerprint_of(anchor).summary()}): "
                    "repeats must share one shape",
                ),
            )
        candidates: dict[int, LoadTest] = {}
        for run in runs:
            if not workload_differences(anchor, run):
                candidates.setdefault(run.pk, run)
        same = regime_set(anchor, baselines) if regime else _compatible(anchor, baselines)
        reference = [b for b in same if _source_pk(b) not in candidates] or same
        return Match(tuple(candidates.values()), tuple(reference[:window]), ())
    current = baselines[0]
    reasons = workload_differences(current, first)
    label = "current baseline" if current.is_current else "newest baseline"
    intro = (
        f"no baseline has the candidate's workload ({fingerprint_of(first).summary()}); "
        f"the {label} “{current.label}” is {fingerprint_of(current).summary()}"
    )
    return Match((first,), (), (intro, *reasons))


def _compatible(anchor: Baseline, baselines: Sequence[Baseline]) -> list[Baseline]:
    return [b for b in baselines if not workload_differences(anchor, b)]


@dataclass(frozen=True)
class RegimeBreak:
    baseline: Baseline  # the newest baseline left out, and every older one with it
    reason: str


def regime_boundary(anchor: Baseline, baselines: Sequence[Baseline]) -> RegimeBreak | None:
    """Where the anchor's regime starts among the older compatible baselines: the newest older
    baseline separated from the anchor by a config change or by a step the gate's own test
    sees (`analysis.regime`), unless it was promoted together with the anchor."""
    older = [
        b
        for b in _compatible(anchor, baselines)
        if b.pk != anchor.pk and (b.measured_at, b.pk) < (anchor.measured_at, anchor.pk)
    ]
    older.sort(key=lambda b: (b.measured_at, b.pk), reverse=True)
    anchor_data = None
    for b in older:
        if _together(anchor, b):
            continue
        config = (
            ConfigVersion.objects.filter(
                service_id=anchor.service_id,
                created_at__gt=b.measured_at,
                created_at__lte=anchor.measured_at,
            )
            .order_by("created_at")
            .first()
        )
        if config is not None:
            return RegimeBreak(b, f"config v{config.version} was deployed after it")
        anchor_data = anchor_data or run_data(anchor)
        step = regime.step_between(run_data(b), anchor_data)
        if step:
            return RegimeBreak(b, step)
    return None


def regime_set(anchor: Baseline, baselines: Sequence[Baseline]) -> list[Baseline]:
    """The anchor's reference set: compatible baselines newer than the regime boundary (and
    those promoted with the anchor), current first, then newest first."""
    same = _compatible(anchor, baselines)
    boundary = regime_boundary(anchor, baselines)
    if boundary is None:
        return same
    cut = (boundary.baseline.measured_at, boundary.baseline.pk)
    return [
        b for b in same if b.pk == anchor.pk or _together(anchor, b) or (b.measured_at, b.pk) > cut
    ]


def current_reference(service: Service) -> list[Baseline]:
    """The baseline set the gate would use now for the current baseline's workload."""
    baselines = _baselines(service)
    if not baselines:
        return []
    return regime_set(baselines[0], baselines)[:BASELINE_WINDOW]


def reference_leavers(service: Service, before: Sequence[Baseline]) -> str:
    """After a promotion: which baselines of the set before it left the gate's reference set,
    and why (a new regime, or another workload); "" when none did."""
    after = {b.pk for b in current_reference(service)}
    gone = [b for b in before if b.pk not in after]
    if not gone:
        return ""
    baselines = _baselines(service)
    boundary = regime_boundary(baselines[0], baselines) if baselines else None
    if boundary is not None:
        why = f"a new regime: {boundary.reason} (“{boundary.baseline.label}”)"
    else:
        why = "the new baseline applies another workload"
    names = ", ".join(f"“{b.label}” (#{b.pk})" for b in gone)
    return f"leaving the gate's reference set: {names}; {why}"


def _together(a: Baseline, b: Baseline) -> bool:
    """Promoted together: one import of several repeats (`LoadTest.promotion_batch`)."""
    run_a, run_b = source_run(a), source_run(b)
    if run_a is None or run_b is None or not run_a.promotion_batch:
        return False
    return run_a.promotion_batch == run_b.promotion_batch


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
    lint = lint_notes(match)
    gate_run = GateRun.objects.create(
        service=service,
        candidate=match.candidate,
        baseline=match.baseline,
        verdict=GateRun.Verdict.PASS if result.passed else GateRun.Verdict.REGRESSION,
        result={**result.to_dict(), "lint": lint},
        table=_heading(match) + gate.format_table(result) + _lint_text(lint, lead="\n"),
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
    lines.append(f"workload:  {fingerprint_of(match.candidate).summary()}")
    return "\n".join(lines) + "\n\n"


def lint_notes(match: Match) -> list[dict]:
    """The lint findings of the candidates and of the baseline set's source runs, one entry
    per run that has any: {side, id, label, refusing: [checks], warnings: [checks], lines}."""
    notes = []
    sides = [("candidate", run) for run in match.candidates]
    sides += [("baseline", source_run(b)) for b in match.baselines]
    for side, run in sides:
        if run is None or not run.lint:
            continue
        notes.append(
            {
                "side": side,
                "id": run.pk,
                "label": run.label,
                "refusing": [f["check"] for f in run.lint if f["severity"] == "refuse"],
                "warnings": [f["check"] for f in run.lint if f["severity"] != "refuse"],
                "overridden": bool(run.lint_override),
            }
        )
    return notes


def _lint_text(notes: list[dict], lead: str = "") -> str:
    if not notes:
        return ""
    lines = []
    for note in notes:
        parts = []
        if note["refusing"]:
            parts.append(f"refusing: {', '.join(note['refusing'])}")
        if note["warnings"]:
            parts.append(f"warnings: {', '.join(note['warnings'])}")
        overridden = " (promoted with an override)" if note["overridden"] else ""
        lines.append(
            f"lint:      {note['side']} “{note['label']}” (load test #{note['id']}) has "
            f"findings{overridden}: {'; '.join(parts)}"
        )
    return lead + "\n".join(lines) + "\n"


def _refuse(
    service: Service,
    match: Match,
    reasons: Sequence[str],
    source: str,
    created_by,
    ci_token: CIToken | None,
) -> GateRun:
    table = "REFUSED: the candidate is not compared.\n" + "\n".join(f"- {r}" for r in reasons)
    lint = lint_notes(match)
    if lint:
        table += "\n\n" + _lint_text(lint).rstrip()
    gate_run = GateRun.objects.create(
        service=service,
        candidate=match.candidate,
        baseline=match.baseline,
        verdict=GateRun.Verdict.REFUSED,
        result={"reasons": list(reasons), "lint": lint},
        table=table,
        source=source,
        created_by=created_by,
        ci_token=ci_token,
    )
    gate_run.candidates.set(match.candidates)
    gate_run.baseline_set.set(match.baselines)
    return gate_run
