"""A duration that does not fit the completed requests: the tool's own request rate times the
duration should give the completed count; the run cannot be shorter than its median request;
and a closed loop cannot have more requests in flight than its concurrency (Little's law), so a
duration too short for n requests of that latency at that concurrency is wrong."""

from __future__ import annotations

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "duration"
FIX = (
    "re-export the results from the tool without editing them; if they are as written, "
    "report the tool's bug: no figure of this run can be trusted"
)


def run(view: RunView, t: Thresholds) -> list[Finding]:
    f = view.fields
    duration, n = f.get("duration_s"), view.count
    if not duration or not n:
        return []
    found = []
    if view.reported_rate:
        implied = n / view.reported_rate
        gap = abs(implied - duration) / duration
        if gap > t.duration_tolerance:
            found.append(
                _finding(
                    f"{n:,} completed at the reported {view.reported_rate:.3g} req/s "
                    f"({view.reported_rate_key}) take {implied:,.1f} s, but the duration is "
                    f"{duration:,.1f} s ({gap:.0%} apart)",
                    {
                        "completed": n,
                        "reported_rate": view.reported_rate,
                        "implied_s": implied,
                        "duration_s": duration,
                    },
                )
            )
    if view.started_at is not None and view.ended_at is not None:
        span = view.ended_at - view.started_at
        # The measured window may exclude warm-up and cool-down, so only longer is impossible.
        if span > 0 and duration > span * (1 + t.duration_tolerance):
            found.append(
                _finding(
                    f"the duration {duration:,.1f} s is longer than the run's own clock "
                    f"({span:,.1f} s from first request to last response)",
                    {"duration_s": duration, "clock_span_s": span},
                )
            )
    e2e_p50 = f.get("e2e_p50_ms")
    if e2e_p50 and duration * 1000 < e2e_p50 * (1 - t.duration_tolerance):
        found.append(
            _finding(
                f"the run lasted {duration:,.2f} s, less than its median request "
                f"({e2e_p50 / 1000:,.2f} s)",
                {"duration_s": duration, "e2e_p50_ms": e2e_p50},
            )
        )
    found += _littles_law(view, t, n, duration)
    return found


def _littles_law(view: RunView, t: Thresholds, n: int, duration: float) -> list[Finding]:
    """Requests in flight from the duration (n x mean latency / duration) against what the run
    allowed (its concurrency) or measured (guidellm's own mean concurrency)."""
    if not view.e2e_mean_ms:
        return []
    in_flight = n * view.e2e_mean_ms / 1000 / duration
    concurrency = view.fields.get("concurrency")
    limit = 1 + t.littles_law_tolerance
    if view.observed_concurrency:
        ratio = in_flight / view.observed_concurrency
        if 1 / limit <= ratio <= limit:
            return []
        return [
            _finding(
                f"{n:,} requests of {view.e2e_mean_ms:,.0f} ms mean in {duration:,.1f} s mean "
                f"{in_flight:.2f} in flight, but the tool measured {view.observed_concurrency:.2f}",
                {
                    "completed": n,
                    "e2e_mean_ms": view.e2e_mean_ms,
                    "duration_s": duration,
                    "in_flight": round(in_flight, 3),
                    "observed": view.observed_concurrency,
                },
            )
        ]
    if concurrency and in_flight > concurrency * limit:
        return [
            _finding(
                f"{n:,} requests of {view.e2e_mean_ms:,.0f} ms mean in {duration:,.1f} s mean "
                f"{in_flight:.1f} in flight, more than the concurrency {concurrency} allows",
                {
                    "completed": n,
                    "e2e_mean_ms": view.e2e_mean_ms,
                    "duration_s": duration,
                    "concurrency": concurrency,
                    "in_flight": round(in_flight, 2),
                },
            )
        ]
    return []


def _finding(message: str, evidence: dict) -> Finding:
    return Finding(NAME, Severity.REFUSE, message, FIX, evidence)


register(Check(NAME, "duration inconsistent with completed requests and rate", run, order=90))
