"""Does a dossier's claim still hold? One baseline figure against the live figure at an equal
workload: holds, drifted (by how much), workload changed (by how much), no live data, not
comparable, insufficient data, or stale.

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
    WORKLOAD_CHANGED = "workload changed"  # live rate or tokens per request out of band
    NOT_COMPARABLE = "not comparable"  # the baseline records too little of its workload
    INSUFFICIENT = "insufficient data"  # too few live requests for the figure
    STALE = "stale"  # the baseline is older than the staleness setting
    NO_CLAIM = "no claim"  # the baseline records no such figure


# Worst first: a service's summary is its worst claim. A figure with no live data ranks below
# one that holds: an engine that exports no such histogram, or lengths without pushed requests
# (most services only scrape), would otherwise hide every verdict the other figures have; the
# summary says "no live data" only when no figure has any.
SEVERITY = [
    Status.DRIFTED,
    Status.UNREPRESENTATIVE,
    Status.STALE,
    Status.WORKLOAD_CHANGED,
    Status.NOT_COMPARABLE,
    Status.INSUFFICIENT,
    Status.HOLDS,
    Status.NO_LIVE_DATA,
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

# Tokens per request within +-10% of the baseline's mean: an end-to-end latency grows with the
# answer's length and a first token with the prompt's, so longer answers are not a regression.
TOKENS_BAND = 0.10

# Throughput, cost per Mtok, margin and GPU busy follow the offered load itself (tokens/s is
# requests/s x tokens per request), so they are compared only inside a band narrow enough that
# the workload alone cannot carry them past RELATIVE_TOLERANCE: 1.07 x 1.07 = 1.145 < 1.15.
RESOURCE_BAND = 0.07


@dataclass(frozen=True)
class Workload:
    """What a service was asked to do: requests/s per replica and mean tokens per request."""

    rate: float | None
    prompt_tokens: float | None
    output_tokens: float | None


WORKLOAD_LABELS = {
    "rate": "request rate",
    "prompt_tokens": "prompt tokens per request",
    "output_tokens": "output tokens per request",
}


@dataclass(frozen=True)
class Shift:
    """One workload figure's live departure from the baseline's, relative (0.27 = +27%)."""

    field: str
    change: float
    band: float

    def __str__(self) -> str:
        return f"{WORKLOAD_LABELS[self.field]} {self.change:+.0%}"


@dataclass(frozen=True)
class WorkloadMatch:
    """The live workload against the baseline's, over the fields a claim depends on."""

    shifts: tuple[Shift, ...] = ()  # the fields outside their band
    unknown: tuple[str, ...] = ()  # fields the baseline or the live window does not record

    @property
    def equal(self) -> bool:
        return not self.shifts and not self.unknown

    @property
    def note(self) -> str:
        if self.shifts:
            return "workload changed: " + ", ".join(str(s) for s in self.shifts)
        if self.unknown:
            names = ", ".join(WORKLOAD_LABELS[f] for f in self.unknown)
            return f"no workload to compare: {names} unknown"
        return ""


def compare_workload(baseline: Workload, live: Workload, bands: dict[str, float]) -> WorkloadMatch:
    """Each field named in `bands` (a Workload field -> its relative band), live vs baseline."""
    shifts, unknown = [], []
    for name, band in bands.items():
        then, now = getattr(baseline, name), getattr(live, name)
        if not then or now is None:
            unknown.append(name)
            continue
        change = now / then - 1.0
        if abs(change) > band:
            shifts.append(Shift(name, change, band))
    return WorkloadMatch(tuple(shifts), tuple(unknown))


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
