"""A run too short for the percentiles it reports: fewer than `min_tail_samples` requests lie
beyond a reported quantile, so that figure is the run's maximum (or an interpolation of it)."""

from __future__ import annotations

from analysis.percentiles import LATENCY_FIELDS, QUANTILE_OF

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "too_short"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    n = view.count
    if not n:
        return []
    reported = sorted(
        {name.split("_")[1] for name in LATENCY_FIELDS if view.fields.get(name) is not None},
        key=lambda label: QUANTILE_OF[label],
    )
    short = {
        label: round(n * (1 - QUANTILE_OF[label]), 2)
        for label in reported
        if n * (1 - QUANTILE_OF[label]) < t.min_tail_samples
    }
    if not short:
        return []
    worst = max(short, key=lambda label: QUANTILE_OF[label])
    needed = int(t.min_tail_samples / (1 - QUANTILE_OF[worst]) + 0.5)
    listed = ", ".join(f"{label.upper()} {tail:g}" for label, tail in short.items())
    return [
        Finding(
            NAME,
            Severity.WARN,
            f"{n} requests: requests beyond each reported quantile: {listed} "
            f"(fewer than {t.min_tail_samples:g}), so those figures are the run's slowest request",
            f"run at least {needed:,} requests to report {worst.upper()}",
            {"requests": n, "tail_samples": short, "needed": needed},
        )
    ]


register(Check(NAME, "too short for the percentiles reported", run, order=10))
