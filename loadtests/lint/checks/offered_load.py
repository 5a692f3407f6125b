"""Offered vs achieved load. Closed loop (a concurrency): by Little's law the mean number of
requests in flight is throughput x mean latency; well below the configured concurrency, a
client limit (connection pool, workers) capped it, and "concurrency 64" was really 8. Open loop
(a rate): requests sent per second (completed and failed) well below the configured rate."""

from __future__ import annotations

import math

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "offered_load"


def achieved_concurrency(view: RunView) -> tuple[float | None, str]:
    """Mean requests in flight, and how it was found."""
    if view.observed_concurrency is not None:
        return view.observed_concurrency, "the tool's own mean concurrency"
    qps, e2e = view.fields.get("qps"), view.e2e_mean_ms
    if qps and e2e:
        return qps * e2e / 1000, "throughput x mean E2E latency (Little's law)"
    return None, ""


def run(view: RunView, t: Thresholds) -> list[Finding]:
    f = view.fields
    concurrency, rate, n = f.get("concurrency"), f.get("request_rate"), view.count
    if concurrency and (view.run.request_rate_inf or rate is None):
        return _closed_loop(view, t, int(concurrency), n)
    if rate and not view.run.request_rate_inf:
        return _open_loop(view, t, rate)
    return []


def ideal_share(view: RunView, offered: int, n: int | None) -> float:
    """The share of the offered slots a perfect client keeps busy over this run: the requests'
    busy time per slot (W = n x mean E2E / slots) over the run's length, which a closed loop
    stretches by the drain of its last requests (about half the slowest, at least the slowest
    when every request fits in one wave). 1 when the latencies are unknown."""
    drain = view.fields.get("e2e_p99_ms") or view.fields.get("e2e_p90_ms")
    if not (n and view.e2e_mean_ms and drain):
        return 1.0
    busy = n * view.e2e_mean_ms / offered
    return min(1.0, busy / max(busy + drain / 2, drain))


def _closed_loop(view: RunView, t: Thresholds, concurrency: int, n: int | None) -> list[Finding]:
    achieved, how = achieved_concurrency(view)
    if achieved is None:
        return []
    # A run of fewer requests than slots can never fill them all.
    offered = min(concurrency, n) if n else concurrency
    expected = ideal_share(view, offered, n)
    share = achieved / offered
    if share >= t.concurrency_warn_share * expected:
        return []
    severity = Severity.REFUSE if share < t.concurrency_refuse_share * expected else Severity.WARN
    if view.run.errors:
        # Failed requests held slots too, for a time the file does not give: failed_share
        # speaks for them, and this check only warns.
        severity = Severity.WARN
    return [
        Finding(
            NAME,
            severity,
            f"configured concurrency {concurrency}, achieved {achieved:.1f} in flight on average "
            f"({how}): {share:.0%} of the offered load, where a client keeping every slot busy "
            f"would reach {expected:.0%} over these requests (their last ones drain)",
            "raise the client's connection limit (e.g. aiohttp's limit, --max-connections, "
            "worker count) or run the client on a host with spare CPU",
            {
                "configured": concurrency,
                "offered": offered,
                "achieved": round(achieved, 2),
                "share": round(share, 3),
                "expected_share": round(expected, 3),
                "basis": how,
            },
        )
    ]


def _open_loop(view: RunView, t: Thresholds, rate: float) -> list[Finding]:
    qps, duration, errors = view.fields.get("qps"), view.fields.get("duration_s"), view.run.errors
    if errors and duration:
        # Failed requests were sent at the rate too: the load offered is every request's
        # (failed_share speaks for the failures).
        qps = (qps or 0.0) + errors / duration
    if not qps or math.isinf(rate):
        return []
    share = qps / rate
    if share >= t.rate_refuse_share:
        return []
    return [
        Finding(
            NAME,
            Severity.REFUSE,
            f"configured rate {rate:g} req/s, achieved {qps:.2f} req/s ({share:.0%}): the client "
            "or the server could not keep up, so this is a saturated run, not the rate named",
            "lower the rate to what the server sustains, or give the client more connections",
            {"configured_rate": rate, "achieved_rate": round(qps, 3), "share": round(share, 3)},
        )
    ]


register(Check(NAME, "offered vs achieved concurrency or rate", run, order=50))
