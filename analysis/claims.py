"""Does a dossier's claim still hold? One baseline figure against the live figure at comparable
load: holds, drifted (by how much), no live data, not comparable, insufficient data, or stale.

Pure functions: `dashboards.claims` reads baselines and roll-ups and asks these.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum


class Status(StrEnum):
    HOLDS = "holds"
    DRIFTED = "drifted"
    # The live workload (prompt or output lengths) parted from the baseline's fingerprint: the
    # baseline no longer represents production, whatever its latency figures say.
    UNREPRESENTATIVE = "not representative"
    NO_LIVE_DATA = "no live data"
    NOT_COMPARABLE = "not comparable"  # live load outside the baseline's band
    INSUFFICIENT = "insufficient data"  # too few live requests for the figure
    STALE = "stale"  # the baseline is older than the staleness setting
    NO_CLAIM = "no claim"  # the baseline records no such figure


# Worst first: a service's summary is its worst claim.
SEVERITY = [
    Status.DRIFTED,
    Status.UNREPRESENTATIVE,
    Status.STALE,
    Status.NOT_COMPARABLE,
    Status.INSUFFICIENT,
    Status.NO_LIVE_DATA,
    Status.HOLDS,
    Status.NO_CLAIM,
]

# Live load within +-25% of the baseline's request rate counts as comparable: latency and
# throughput move with load, so a claim made at one load says nothing about another.
LOAD_BAND = 0.25

# How far a live figure may stray before the claim is called drifted. Relative for latency,
# throughput and cost (run-to-run spread of a P99 over an hour of traffic is ~10%); absolute,
# in ratio points, for utilization and margin.
RELATIVE_TOLERANCE = 0.15
ABSOLUTE_TOLERANCE = 0.10


@dataclass(frozen=True)
class Verdict:
    status: Status
    change: float | None = None  # relative (0.2 = +20%) or absolute (ratio points)
    relative: bool = True

    @property
    def change_display(self) -> str:
        if self.change is None:
            return ""
        if self.relative:
            return "±0%" if abs(self.change) < 0.005 else f"{self.change:+.0%}"
        return "±0 pts" if abs(self.change) < 0.005 else f"{self.change * 100:+.0f} pts"


def comparable_load(baseline_rate: float | None, live_rate: float | None) -> bool | None:
    """Whether live load is in the baseline's band; None when either rate is unknown."""
    if not baseline_rate or live_rate is None:
        return None
    return abs(live_rate / baseline_rate - 1.0) <= LOAD_BAND


def judge(
    baseline: float | None,
    live: float | None,
    *,
    relative: bool = True,
    tolerance: float | None = None,
) -> Verdict:
    """Compare one figure. `relative`: by ratio (latency, throughput, cost); else by points."""
    if baseline is None:
        return Verdict(Status.NO_CLAIM)
    if live is None:
        return Verdict(Status.NO_LIVE_DATA)
    if relative:
        if baseline == 0:
            return Verdict(Status.NO_CLAIM)
        change = live / baseline - 1.0
        limit = RELATIVE_TOLERANCE if tolerance is None else tolerance
    else:
        change = live - baseline
        limit = ABSOLUTE_TOLERANCE if tolerance is None else tolerance
    status = Status.DRIFTED if abs(change) > limit else Status.HOLDS
    return Verdict(status, change, relative)


def judge_within(baseline: float | None, lower: float, upper: float) -> Verdict:
    """Compare a latency known only within [lower, upper] (a histogram bucket: "< 300 ms" is
    [0, 300]): it holds when the baseline's tolerance band meets the interval, else drifted by
    the nearest end. Never a value invented inside the bucket."""
    if baseline is None or baseline == 0:
        return Verdict(Status.NO_CLAIM)
    low, high = baseline * (1 - RELATIVE_TOLERANCE), baseline * (1 + RELATIVE_TOLERANCE)
    if upper >= low and lower <= high:
        return Verdict(Status.HOLDS, 0.0, True)
    nearest = upper if upper < low else lower
    return Verdict(Status.DRIFTED, nearest / baseline - 1.0, True)


def judge_intervals(base_lower: float, base_upper: float, lower: float, upper: float) -> Verdict:
    """Both sides known only within intervals (the engine's buckets for the baseline's run and
    for the live window, e.g. both "< 300 ms"): holds when the baseline's interval, widened by
    the tolerance, meets the live one; else drifted by the nearest ends. No value is invented
    inside either bucket."""
    low, high = base_lower * (1 - RELATIVE_TOLERANCE), base_upper * (1 + RELATIVE_TOLERANCE)
    if upper >= low and lower <= high:
        return Verdict(Status.HOLDS, 0.0, True)
    if upper < low:  # live entirely faster; base_lower > 0 here
        return Verdict(Status.DRIFTED, upper / base_lower - 1.0, True)
    if base_upper == 0:
        return Verdict(Status.NO_CLAIM)
    return Verdict(Status.DRIFTED, lower / base_upper - 1.0, True)


def is_stale(measured_at: datetime, now: datetime, max_age: timedelta) -> bool:
    return now - measured_at > max_age


def worst(statuses: list[Status]) -> Status:
    """The status a service shows for all its claims together."""
    present = set(statuses)
    return next((s for s in SEVERITY if s in present), Status.NO_CLAIM)
