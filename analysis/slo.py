"""Service level objectives: how many requests were good, the error budget, the burn rate.

A latency objective says "a request is good when its TTFT is at most X ms" (and its TPOT at
most Y ms, ...); a request is good for an SLO when it meets *all* the SLO's objectives, and the
SLO holds when the good share over its window (say 28 days) is at least its target (say 99%).
An availability SLO counts the requests that did not fail.

Where the counts come from decides how exact they are:
- Per-request data (pushed requests, a load test's arrays) tests every request against every
  objective: the joint count is exact (`good_per_request`).
- Distributions (a DDSketch or a Prometheus histogram's buckets) count each objective on its
  own. Below the bin or bucket holding the threshold a request is good, above it bad, inside
  it unknown: the count is a range (`Count.good_low` .. `good_high`), never a rounded guess.
  Several objectives over separate distributions give the joint bad share only within the
  Frechet bounds: at least the worst one's, at most their sum (`joint`).

Burn rate (Google's SRE workbook, chapter 5): the bad share divided by the share the target
allows, so 1x spends the budget exactly over the window and 14.4x spends 2% of a 30-day budget
in an hour. A multi-window alert pages when both a long and a short window burn faster than
the factor: the long one proves the burn is significant, the short one that it is still going.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from analysis.buckets import BucketCounts

EXACT = "per request (exact)"
BOUNDED = "from distributions (bounded)"


@dataclass(frozen=True)
class Count:
    """Good requests among `total`: exactly known when `good_low == good_high`."""

    total: float
    good_low: float
    good_high: float

    def __post_init__(self) -> None:
        if not (0 <= self.good_low <= self.good_high <= self.total + 1e-9):
            raise ValueError(
                f"need 0 <= good_low <= good_high <= total, got "
                f"{self.good_low}, {self.good_high}, {self.total}"
            )

    @property
    def exact(self) -> bool:
        return self.good_high - self.good_low < 1e-9

    @property
    def bad_share_low(self) -> float:
        return (self.total - self.good_high) / self.total if self.total else 0.0

    @property
    def bad_share_high(self) -> float:
        return (self.total - self.good_low) / self.total if self.total else 0.0

    def __add__(self, other: Count) -> Count:
        return Count(
            self.total + other.total,
            self.good_low + other.good_low,
            self.good_high + other.good_high,
        )


NONE = Count(0.0, 0.0, 0.0)


@dataclass
class SloWindow:
    """What one service's roll-ups say about request quality over one window (read by
    `alerts.slo_windows`, counted by each SLO kind, `dossiers.slo_kinds`): each latency
    metric's merged distribution (a sketch of pushed requests, else engine bucket deltas),
    and the pushed requests and their failures."""

    service_id: int
    sketches: dict[str, object] = field(default_factory=dict)  # metric -> DDSketch (ms)
    buckets: dict[str, BucketCounts] = field(default_factory=dict)  # metric -> (s)
    requests: int = 0
    errors: int = 0
    scraped_requests: float = 0.0  # the engine's successful requests (its counters)
    scraped_errors: float = 0.0  # the engine's requests finished with an error
    # Exact joint counts per latency SLO key: [judged, good], and how many merged rows with
    # pushed requests carried the key (all of them: the count covers the whole window; a
    # merged row carries it when every host that pushed requests in its period did).
    joint: dict[str, list[int]] = field(default_factory=dict)
    pushed_rows: int = 0
    joint_rows: dict[str, int] = field(default_factory=dict)
    first_start: datetime | None = None  # the earliest roll-up row in the window

    def exact_joint(self, key: str) -> list[int] | None:
        """[judged, good] when every row with pushed requests in the window counted `key`."""
        if not self.pushed_rows or self.joint_rows.get(key) != self.pushed_rows:
            return None
        return self.joint[key]


def good_per_request(
    requests: Iterable[dict[str, float | None]],
    thresholds_ms: dict[str, float],
    *,
    require_ok: bool = False,
) -> Count:
    """The exact joint count from per-request values (ms): good when every objective's metric
    is known and at most its threshold (and, with `require_ok`, the request did not fail).
    A request missing a metric an objective needs is not counted (it cannot be judged)."""
    total = good = 0
    for r in requests:
        values = [r.get(m) for m in thresholds_ms]
        if any(v is None for v in values):
            continue
        total += 1
        meets = all(v <= t for v, t in zip(values, thresholds_ms.values(), strict=True))
        if meets and (not require_ok or r.get("ok", True)):
            good += 1
    return Count(total, good, good)


def objective_key(thresholds_ms: dict[str, float]) -> str:
    """A latency SLO's thresholds as a stable text key: "tpot<=50;ttft<=500". Roll-ups store
    each key's per-request good count, so an edited SLO (a new key) never reuses old counts."""
    return ";".join(f"{m}<={thresholds_ms[m]:g}" for m in sorted(thresholds_ms))


def judge_requests(
    requests: Iterable[tuple[float | None, ...]],
    metrics: Sequence[str],
    keys: dict[str, dict[str, float]],
) -> dict[str, list[int]]:
    """Per key, [requests judged, requests good] over rows of values in `metrics` order: the
    exact joint count a roll-up keeps for each latency SLO of the service."""
    index = {m: i for i, m in enumerate(metrics)}
    out = {key: [0, 0] for key in keys}
    for row in requests:
        for key, thresholds in keys.items():
            values = [row[index[m]] for m in thresholds]
            if any(v is None for v in values):
                continue
            out[key][0] += 1
            if all(v <= t for v, t in zip(values, thresholds.values(), strict=True)):
                out[key][1] += 1
    return out


def good_from_buckets(bc: BucketCounts | None, threshold: float) -> Count:
    """Requests at or below `threshold` (the buckets' unit) in a histogram's buckets.

    A threshold on an edge is exact (`le` is inclusive). Between two edges, the bucket
    holding it is unknown: its requests are counted good in `good_high` only. Above the last
    finite edge, only the +Inf bucket is unknown."""
    if bc is None or bc.count == 0:
        return NONE
    cum = bc.cumulative()
    total = cum[-1]
    below = [i for i, e in enumerate(bc.edges) if e <= threshold]
    low = cum[below[-1]] if below else 0.0
    above = [i for i, e in enumerate(bc.edges) if e >= threshold]
    high = cum[above[0]] if above else total
    return Count(total, low, high)


def good_from_sketch(sketch, threshold: float) -> Count:
    """Requests at or below `threshold` (the sketch's unit) in a DDSketch.

    Bins wholly below the threshold's bin are good, wholly above bad; the threshold's own bin
    (within the sketch's relative accuracy of it) is unknown, unless the exact min and max
    the sketch keeps settle it."""
    total = float(sketch.count) if sketch is not None else 0.0
    if total <= 0:
        return NONE
    if sketch._max <= threshold:
        return Count(total, total, total)
    if sketch._min > threshold:
        return Count(total, 0.0, 0.0)
    store = sketch._store
    key = sketch._mapping.key(threshold) if threshold > 0 else None
    below = float(sketch._zero_count)  # zero-latency values are at or below any threshold
    inside = 0.0
    if key is not None:
        for i, c in enumerate(store.bins):
            k = store.offset + i
            if k < key:
                below += c
            elif k == key:
                inside += c
    below = min(below, total)
    return Count(total, below, min(total, below + inside))


def joint(counts: Sequence[Count]) -> Count:
    """One SLO's count from its objectives' separate counts (over the same requests).

    The joint bad share lies between the largest single bad share (a request bad for
    several objectives counts once) and their sum (no request bad for two): the Frechet
    bounds. One count is returned as it is."""
    counts = [c for c in counts if c.total > 0]
    if not counts:
        return NONE
    if len(counts) == 1:
        return counts[0]
    total = max(c.total for c in counts)
    bad_low = max(c.bad_share_low for c in counts)
    bad_high = min(1.0, sum(c.bad_share_high for c in counts))
    return Count(total, total * (1 - bad_high), total * (1 - bad_low))


@dataclass(frozen=True)
class Budget:
    """An SLO's standing over one window."""

    target: float  # e.g. 0.99
    count: Count

    def __post_init__(self) -> None:
        if not 0 < self.target < 1:
            raise ValueError(f"target: must be between 0 and 1 (exclusive), got {self.target}")

    @property
    def allowed_bad_share(self) -> float:
        return 1.0 - self.target

    @property
    def compliance(self) -> tuple[float, float] | None:
        """(low, high) good share; None without requests."""
        c = self.count
        if not c.total:
            return None
        return c.good_low / c.total, c.good_high / c.total

    @property
    def burn_rate(self) -> tuple[float, float] | None:
        """(low, high): the bad share over the allowed bad share."""
        c = self.count
        if not c.total:
            return None
        # Rounded to 9 digits: 14.4% bad at 99% is a 14.4x burn, not 14.399999999999999x.
        return (
            round(c.bad_share_low / self.allowed_bad_share, 9),
            round(c.bad_share_high / self.allowed_bad_share, 9),
        )

    @property
    def budget_left(self) -> tuple[float, float] | None:
        """(low, high) share of the window's error budget not yet spent (negative: overspent).
        The window's budget is its allowed bad share of the requests it has seen."""
        burn = self.burn_rate
        if burn is None:
            return None
        return 1.0 - burn[1], 1.0 - burn[0]

    @property
    def met(self) -> bool | None:
        """True when certainly met, False when certainly missed, None when unknown."""
        comp = self.compliance
        if comp is None:
            return None
        if comp[0] >= self.target:
            return True
        if comp[1] < self.target:
            return False
        return None


@dataclass(frozen=True)
class BurnPair:
    """One multi-window alert: page when both windows burn at `factor` or faster."""

    name: str  # "fast", "slow", "ticket"
    factor: float
    long_s: int
    short_s: int
    severity: str

    def __post_init__(self) -> None:
        if self.factor <= 0:
            raise ValueError(f"{self.name}: factor must be positive")
        if not 0 < self.short_s < self.long_s:
            raise ValueError(f"{self.name}: the short window must be shorter than the long one")

    def budget_spent_to_fire(self, window_s: float) -> float:
        """The share of a `window_s` budget spent by the time the long window alone fires."""
        return self.factor * self.long_s / window_s


# The SRE workbook's three pairs (table 5-8): 2% of the budget in an hour pages, 5% in six
# hours pages, 10% in three days opens a ticket.
WORKBOOK_PAIRS = (
    BurnPair("fast", 14.4, 3600, 300, "critical"),
    BurnPair("slow", 6.0, 6 * 3600, 1800, "critical"),
    BurnPair("ticket", 1.0, 3 * 86400, 6 * 3600, "warning"),
)
# Beside them, a page for a (near) total outage within minutes at any target: the fast pair
# needs 14.4 x 1 h x (1 - target) of it, 8.6 min at 99%. 20x over 10 min (20% of requests
# bad at 99%) and over the last minute fires after 2 minutes of outage at 99%, 1 at 99.5%.
OUTAGE_PAIR = BurnPair("outage", 20.0, 600, 60, "critical")
DEFAULT_PAIRS = (*WORKBOOK_PAIRS, OUTAGE_PAIR)


def short_window_covered(first_data_s: float | None, short_s: int) -> bool:
    """Whether the service has had data for the whole short window (`first_data_s`: seconds
    from its first data in the long window to the window's end). A service just starting
    (or back after a gap) has its first few minutes in every window at once, so a handful of
    requests would decide the three-day burn: 30-day replays paged on that alone."""
    return first_data_s is not None and first_data_s >= short_s


def pair_value(long_burn: float, short_burn: float) -> float:
    """The one figure a pair compares with its factor: both windows exceed it exactly when
    the smaller does."""
    return min(long_burn, short_burn)


def time_to_fire_s(pair: BurnPair, target: float, bad_share: float) -> float | None:
    """Seconds from the start of a steady burn (after in-budget traffic with no bad requests)
    until the long window's burn exceeds the factor; None if it never does."""
    burn = bad_share / (1.0 - target)
    if burn < pair.factor:
        return None
    return pair.long_s * pair.factor / burn


def replay(
    good: Sequence[float],
    total: Sequence[float],
    *,
    target: float,
    pair: BurnPair,
    step_s: int = 60,
    min_requests: int = 100,
    keep_firing_s: int = 0,
) -> list[int]:
    """The steps (indices) at which `pair` starts firing over a series of per-step counts,
    evaluated at every step as the live rule is (with its minimum of requests in the long
    window, and its keep-firing time): how often a history would have paged."""
    if len(good) != len(total):
        raise ValueError("good and total: need one count per step each")
    allowed = 1.0 - target
    cum_good = [0.0]
    cum_total = [0.0]
    for g, t in zip(good, total, strict=True):
        cum_good.append(cum_good[-1] + g)
        cum_total.append(cum_total[-1] + t)

    def burn(end: int, steps: int) -> float:
        start = max(0, end - steps)
        t = cum_total[end] - cum_total[start]
        if t <= 0:
            return 0.0
        return round(((t - (cum_good[end] - cum_good[start])) / t) / allowed, 9)

    long_steps = math.ceil(pair.long_s / step_s)
    short_steps = math.ceil(pair.short_s / step_s)
    first = next((i for i, t in enumerate(total) if t > 0), len(total))
    keep_steps = math.ceil(keep_firing_s / step_s) if keep_firing_s else 0
    starts, firing, last_active = [], False, -(10**9)
    for i in range(1, len(good) + 1):
        # The short window must be full of history (see `short_window_covered`).
        covered = i - first >= short_steps
        enough = covered and cum_total[i] - cum_total[max(0, i - long_steps)] >= min_requests
        active = enough and pair_value(burn(i, long_steps), burn(i, short_steps)) >= pair.factor
        if active:
            last_active = i
            if not firing:
                starts.append(i - 1)
        firing = active or (firing and i - last_active <= keep_steps)
    return starts
