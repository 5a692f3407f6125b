"""Impossible numbers and timestamps: percentiles that fall as the quantile rises, a TTFT above
the end-to-end latency at the same quantile (every request's TTFT is part of its E2E), a first
token before its request started or a response before its first token, a run ending before it
started."""

from __future__ import annotations

import itertools

from analysis.percentiles import LATENCY_METRICS, PERCENTILE_LABELS

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "impossible"
FIX = (
    "re-export the results from the tool without editing them (or report the tool's bug); "
    "no figure of this run can be trusted"
)


def run(view: RunView, t: Thresholds) -> list[Finding]:
    f, slack = view.fields, 1 + t.ordering_slack
    problems: list[tuple[str, dict]] = []
    for metric in LATENCY_METRICS:
        values = [(p, f.get(f"{metric}_{p}_ms")) for p in PERCENTILE_LABELS]
        values = [(p, v) for p, v in values if v is not None]
        for (p1, v1), (p2, v2) in itertools.pairwise(values):
            if v1 > v2 * slack:
                problems.append(
                    (
                        f"{metric.upper()} {p1.upper()} {v1:,.1f} ms is above "
                        f"{p2.upper()} {v2:,.1f} ms",
                        {"metric": metric, p1: v1, p2: v2},
                    )
                )
    for p in PERCENTILE_LABELS:
        ttft, e2e = f.get(f"ttft_{p}_ms"), f.get(f"e2e_{p}_ms")
        if ttft is not None and e2e is not None and ttft > e2e * slack:
            problems.append(
                (
                    f"TTFT {p.upper()} {ttft:,.1f} ms is above E2E {p.upper()} {e2e:,.1f} ms",
                    {"quantile": p, "ttft_ms": ttft, "e2e_ms": e2e},
                )
            )
    if (
        view.started_at is not None
        and view.ended_at is not None
        and view.ended_at < view.started_at
    ):
        problems.append(
            ("the run ends before it starts", {"start": view.started_at, "end": view.ended_at})
        )
    bad = _bad_requests(view)
    if bad:
        problems.append(
            (
                f"{len(bad)} request(s) with timestamps out of order (first: request {bad[0] + 1})",
                {"requests": bad[:10]},
            )
        )
    return [
        Finding(NAME, Severity.REFUSE, message, FIX, evidence) for message, evidence in problems
    ]


def _bad_requests(view: RunView) -> list[int]:
    bad = []
    for i, timing in enumerate(view.timings or []):
        points = [x for x in (timing.start, timing.first_token, timing.end) if x is not None]
        if any(a > b for a, b in itertools.pairwise(points)):
            bad.append(i)
    return bad


register(Check(NAME, "impossible timestamps and percentiles", run, order=100))
