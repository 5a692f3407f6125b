"""Failed requests above a share: the percentiles describe the survivors only (often the fast
ones, when the failures are timeouts)."""

from __future__ import annotations

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "failed_share"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    failed, completed = view.run.errors, view.count
    if not failed or completed is None or view.run.failed:
        return []  # a run with no success at all is already "failed" (never a baseline)
    share = failed / (failed + completed)
    if share <= t.failed_warn_share:
        return []
    severity = Severity.REFUSE if share > t.failed_refuse_share else Severity.WARN
    limit = t.failed_refuse_share if severity == Severity.REFUSE else t.failed_warn_share
    return [
        Finding(
            NAME,
            severity,
            f"{failed:,} of {failed + completed:,} requests failed ({share:.1%}, above "
            f"{limit:.0%}): the latency figures describe the survivors only",
            "find the errors' cause (timeouts, rate limits, context length) before measuring",
            {"failed": failed, "completed": completed, "share": round(share, 4)},
        )
    ]


register(Check(NAME, "failed share above a setting", run, order=60))
