"""Requests left unfinished when the run stopped (guidellm's throughput step queues hundreds of
requests and stops the clock with most in flight): the figures describe the few that finished."""

from __future__ import annotations

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "unfinished"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    incomplete, completed = view.incomplete, view.count or 0
    if not incomplete:
        return []
    total = incomplete + completed + (view.run.errors or 0)
    share = incomplete / total
    if share <= t.unfinished_warn_share:
        return []
    severity = Severity.REFUSE if share > t.unfinished_refuse_share else Severity.WARN
    return [
        Finding(
            NAME,
            severity,
            f"{incomplete:,} of {total:,} requests were still running when the run stopped "
            f"({share:.0%}): their latencies are missing from every figure",
            "lengthen the run (--max-seconds) or cap the requests in flight "
            "(--max-concurrency) so the requests sent can finish",
            {"incomplete": incomplete, "total": total, "share": round(share, 3)},
        )
    ]


register(Check(NAME, "requests left unfinished", run, order=70))
