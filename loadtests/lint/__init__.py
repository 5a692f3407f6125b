"""Load-test lint: what in a parseable file says its numbers should not be trusted.

    reports = lint_runs(documents, runs)          # one RunLint per parsed run
    reports[0].findings, reports[0].refusing, reports[0].fingerprint

Checks live in `loadtests.lint.checks`, one module each, registered like the formats; every
import path (file import, API, gate candidate) runs them through `loadtests.importing`, which
stores the findings and the workload fingerprint with the run. docs/lint.md lists the checks,
their thresholds (the `PERFHUB_LINT` setting) and the measured false-alarm rates.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis.fingerprint import Fingerprint
from loadtests.formats import Document, ParsedRun

from . import checks as _checks  # noqa: F401  (registers the checks)
from .base import Check, Finding, RunView, Severity
from .inputs import register_reader, views
from .registry import check_names, checks, register, unregister
from .thresholds import Thresholds, from_settings


@dataclass
class RunLint:
    findings: list[Finding]
    fingerprint: Fingerprint

    @property
    def refusing(self) -> list[Finding]:
        return [f for f in self.findings if f.refusing]


def lint_runs(
    documents: list[Document], runs: list[ParsedRun], thresholds: Thresholds | None = None
) -> list[RunLint]:
    """Every registered check over every run of one file, in registry order. A failed run (no
    request succeeded) is linted too: its fields are absent, so most checks stay silent."""
    t = thresholds or from_settings()
    run_views = views(documents, runs)
    findings: list[list[Finding]] = [[] for _ in runs]
    for check in checks():
        if check.per_file:
            for index, found in enumerate(check.run(run_views, t)):
                findings[index].extend(found)
        else:
            for index, view in enumerate(run_views):
                findings[index].extend(check.run(view, t))
    return [
        RunLint(found, view.fingerprint()) for found, view in zip(findings, run_views, strict=True)
    ]


__all__ = [
    "Check",
    "Finding",
    "RunLint",
    "RunView",
    "Severity",
    "Thresholds",
    "check_names",
    "checks",
    "lint_runs",
    "register",
    "register_reader",
    "unregister",
]
