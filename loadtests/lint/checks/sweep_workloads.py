"""Sweep points with different workloads: the runs of one file (a sweep) should differ only in
load; when their prompt or output length distributions part, a throughput-vs-latency curve
across them mixes two workloads."""

from __future__ import annotations

from analysis import fingerprint

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "sweep_workloads"


def run(views: list[RunView], t: Thresholds) -> list[list[Finding]]:
    out: list[list[Finding]] = [[] for _ in views]
    usable = [v for v in views if not v.run.failed]
    if len(usable) < 2:
        return out
    first = usable[0]
    reference = first.fingerprint()
    for view in usable[1:]:
        fp = view.fingerprint()
        reasons = fingerprint.length_differences("prompt", reference.prompt, fp.prompt)
        reasons += fingerprint.length_differences("output", reference.output, fp.output)
        for name in ("dataset", "ignore_eos"):
            a, b = getattr(reference, name), getattr(fp, name)
            if a is not None and b is not None and a != b:
                reasons.append(f"different {name}: run 1 {a}, this run {b}")
        if reasons:
            out[view.index].append(
                Finding(
                    NAME,
                    Severity.WARN,
                    f"run {view.index + 1} of this file applied another workload than run "
                    f"{first.index + 1}: {'; '.join(reasons)}",
                    "give every point of a sweep the same dataset, lengths and seed; vary only "
                    "the concurrency or rate",
                    {"reference_run": first.index + 1, "differences": reasons},
                )
            )
    return out


register(Check(NAME, "sweep points with different workloads", run, per_file=True, order=110))
