"""Running the gate: judge candidate runs against their baseline set and store the GateRun
(a verdict, or a refusal with its reasons), with both sides' lint findings."""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction

from analysis import gate
from dossiers.models import Service
from loadtests.gate.reference import Match, _baselines, match_baselines
from loadtests.gate.stored_runs import fingerprint_of, run_data
from loadtests.importing import (
    LoadTestImportError,
    import_loadtest_file,
    names_each_file,
    prepare_files,
)
from loadtests.models import CIToken, GateRun, LoadTest, source_run


class GateInputError(LoadTestImportError):
    """Bad input for the gate that is not the file's fault (e.g. malformed overrides)."""


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
        uploads = prepare_files(files or [(candidate_content, filename)])
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
                if not names_each_file(files or [(candidate_content, filename)], uploads):
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
