"""What happened between two consecutive scrapes of one host and service (docs/method.md).

Per series: the delta between the scrapes, with no extrapolation. A series that went down
restarted, so its new value is the delta. A series absent from the earlier scrape appeared since
(client libraries create a labelled series on its first increment), so it counts from zero. Only
then are series summed; histogram deltas are summed per `le`, made monotonic across `le`, and
de-cumulated into per-bucket counts.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from analysis.buckets import BucketCounts
from collectors.exposition.scrape import HistogramSeries, ParsedScrape


@dataclass(frozen=True)
class ScrapeWindow:
    seconds: float
    counters: dict[str, float] = field(default_factory=dict)  # increases over the window
    rates: dict[str, float] = field(default_factory=dict)  # increases per second
    histograms: dict[str, BucketCounts] = field(default_factory=dict)  # observations in window
    gauges: dict[str, float] = field(default_factory=dict)  # as of the later scrape
    reset_detected: bool = False
    gpus: list[dict] = field(default_factory=list)  # as of the later scrape (dcgm)


def window(prev: ParsedScrape, cur: ParsedScrape, seconds: float) -> ScrapeWindow:
    """Deltas from `prev` to `cur`, `seconds` apart."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"seconds: must be a positive number, got {seconds}")
    if prev.source != cur.source:
        raise ValueError(f"cannot window a {prev.source} scrape against a {cur.source} scrape")

    reset = False
    counter_deltas: dict[str, list[float]] = defaultdict(list)
    for key, value in cur.counters.items():
        before = prev.counters.get(key, 0.0)
        if value < before:
            reset = True
            before = 0.0
        counter_deltas[key[0]].append(value - before)
    counters = {name: math.fsum(deltas) for name, deltas in counter_deltas.items()}

    histogram_deltas: dict[str, list[HistogramSeries]] = defaultdict(list)
    for key, series in cur.histograms.items():
        delta, restarted = _histogram_delta(prev.histograms.get(key), series)
        reset = reset or restarted
        histogram_deltas[key[0]].append(delta)

    return ScrapeWindow(
        seconds=seconds,
        counters=counters,
        rates={name: value / seconds for name, value in counters.items()},
        histograms={name: _sum_series(deltas) for name, deltas in histogram_deltas.items()},
        gauges=dict(cur.gauges),
        reset_detected=reset,
        gpus=list(cur.gpus),
    )


def _histogram_delta(
    before: HistogramSeries | None, after: HistogramSeries
) -> tuple[HistogramSeries, bool]:
    """The series' own delta, and whether it restarted (went down, or changed its buckets)."""
    if before is None:
        return after, False
    if before.edges != after.edges:
        return after, True
    pairs = list(zip(before.cumulative, after.cumulative, strict=True))
    if after.count < before.count or any(a < b for b, a in pairs):
        return after, True
    return (
        HistogramSeries(
            edges=after.edges,
            cumulative=tuple(a - b for b, a in pairs),
            sum=after.sum - before.sum,
            count=after.count - before.count,
        ),
        False,
    )


def _sum_series(deltas: list[HistogramSeries]) -> BucketCounts:
    """Sum cumulative deltas per `le` over the edges all series share, then de-cumulate."""
    shared = set(deltas[0].edges)
    for delta in deltas[1:]:
        shared &= set(delta.edges)
    edges = tuple(sorted(shared))
    totals = [0.0] * (len(edges) + 1)
    for delta in deltas:
        at = dict(zip(delta.edges, delta.cumulative, strict=False))
        for i, edge in enumerate(edges):
            totals[i] += at[edge]
        totals[-1] += delta.cumulative[-1]
    total_sum = math.fsum(d.sum for d in deltas)
    return BucketCounts.from_cumulative(edges, totals, total_sum)
