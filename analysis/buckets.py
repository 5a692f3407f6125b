"""Bucket counts from classic Prometheus histograms, and the quantiles they honestly support.

A `BucketCounts` holds per-bucket (not cumulative) counts over a window: `counts[i]` counts the
observations in `(edges[i-1], edges[i]]`, and the last count is the `+Inf` bucket. Windows merge by
adding counts, so a P99 over any range of minutes and hosts is taken from the merged counts, never
averaged (docs/method.md).

A quantile is interpolated linearly inside the bucket it lands in, as Prometheus'
`histogram_quantile` does, and carries the bucket's edges as its error bar
(method "bucket-bounded"). One that lands in `+Inf` has no value: only "> last edge".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

from analysis.percentiles import STANDARD_QUANTILES, Percentile

METHOD = "bucket-bounded"


@dataclass(frozen=True)
class BucketCounts:
    edges: tuple[float, ...]  # finite upper bounds (`le`), strictly increasing
    counts: tuple[float, ...]  # len(edges) + 1; the last is the +Inf bucket
    sum: float = 0.0

    def __post_init__(self) -> None:
        edges = tuple(float(e) for e in self.edges)
        counts = tuple(float(c) for c in self.counts)
        if not all(math.isfinite(e) for e in edges):
            raise ValueError("edges: must be finite (the +Inf bucket is implied)")
        if any(b <= a for a, b in pairwise(edges)):
            raise ValueError("edges: must be strictly increasing")
        if len(counts) != len(edges) + 1:
            raise ValueError(
                f"counts: expected {len(edges) + 1} (one per edge plus +Inf), got {len(counts)}"
            )
        if not all(math.isfinite(c) and c >= 0 for c in counts):
            raise ValueError("counts: must be finite and non-negative")
        if not math.isfinite(float(self.sum)):
            raise ValueError("sum: must be finite")
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "counts", counts)
        object.__setattr__(self, "sum", float(self.sum))

    @classmethod
    def empty(cls, edges: Sequence[float]) -> BucketCounts:
        return cls(tuple(edges), (0.0,) * (len(edges) + 1), 0.0)

    @classmethod
    def from_cumulative(
        cls, edges: Sequence[float], cumulative: Sequence[float], sum: float = 0.0
    ) -> BucketCounts:
        """From cumulative counts per `le` (last = +Inf), made monotonic first.

        A cumulative count lower than the one below it cannot happen in one consistent
        snapshot; it comes from buckets read at slightly different moments, or from summing
        deltas. Like Prometheus, take the running maximum rather than invent negative counts.
        """
        monotonic: list[float] = []
        running = 0.0
        for value in cumulative:
            running = max(running, float(value))
            monotonic.append(running)
        counts = [monotonic[0]] + [b - a for a, b in pairwise(monotonic)]
        return cls(tuple(edges), tuple(counts), sum)

    @property
    def count(self) -> float:
        return math.fsum(self.counts)

    def cumulative(self) -> tuple[float, ...]:
        out: list[float] = []
        running = 0.0
        for c in self.counts:
            running += c
            out.append(running)
        return tuple(out)

    def to_dict(self) -> dict:
        return {"edges": list(self.edges), "counts": list(self.counts), "sum": self.sum}

    @classmethod
    def from_dict(cls, data: dict) -> BucketCounts:
        try:
            return cls(tuple(data["edges"]), tuple(data["counts"]), data.get("sum", 0.0))
        except KeyError as exc:
            raise ValueError(f"{exc.args[0]}: missing") from None
        except TypeError as exc:
            raise ValueError(f"bucket counts: {exc}") from None


def merge(a: BucketCounts, b: BucketCounts) -> BucketCounts:
    """Add two windows' counts. The edges must be the same.

    Adding counts across different edges would have to split a bucket, which invents data;
    callers that hold different layouts can `coarsen` both onto their shared edges first.
    """
    if a.edges != b.edges:
        raise ValueError("cannot merge bucket counts with different edges (coarsen first)")
    return BucketCounts(
        a.edges, tuple(x + y for x, y in zip(a.counts, b.counts, strict=True)), a.sum + b.sum
    )


def merge_all(items: Iterable[BucketCounts]) -> BucketCounts | None:
    """Merge any number of windows; None when there are none."""
    merged: BucketCounts | None = None
    for item in items:
        merged = item if merged is None else merge(merged, item)
    return merged


def coarsen(bc: BucketCounts, edges: Sequence[float]) -> BucketCounts:
    """Re-bucket onto a subset of the edges. Exact: a coarse bucket is a sum of fine ones."""
    keep = tuple(edges)
    missing = set(keep) - set(bc.edges)
    if missing:
        raise ValueError(f"edges {sorted(missing)} are not edges of these counts")
    cumulative = dict(zip(bc.edges, bc.cumulative(), strict=False))
    kept = [cumulative[e] for e in keep] + [bc.count]
    return BucketCounts.from_cumulative(keep, kept, bc.sum)


def shared_edges(items: Iterable[BucketCounts]) -> tuple[float, ...]:
    """The edges every item has: the finest layout they can all be coarsened onto."""
    common: set[float] | None = None
    for item in items:
        common = set(item.edges) if common is None else common & set(item.edges)
    return tuple(sorted(common or ()))


def quantile(bc: BucketCounts, q: float) -> Percentile:
    """Prometheus-style interpolated quantile, with the bucket's edges as its bounds."""
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q: must be within [0, 1], got {q}")
    total = bc.count
    n = round(total)
    if total <= 0:
        return Percentile(q=q, value=None, count=0, method=METHOD)
    rank = q * total
    cumulative = bc.cumulative()
    # First non-empty bucket whose cumulative count reaches the rank (+Inf always does).
    index = next(
        (i for i, c in enumerate(cumulative) if c >= rank and c > 0),
        len(cumulative) - 1,
    )
    if index == len(bc.edges):
        last = bc.edges[-1] if bc.edges else None
        return Percentile(q=q, value=None, count=n, lower=last, method=METHOD, above_last_edge=last)
    upper = bc.edges[index]
    if index == 0:
        # Prometheus assumes the first bucket starts at 0 unless its edge is not above 0.
        if upper <= 0:
            return Percentile(q=q, value=upper, count=n, lower=None, upper=upper, method=METHOD)
        # Inside the first bucket nothing says where: interpolating from 0 would invent a
        # value (vLLM's queue histogram starts at 0.3 s). Known only to be at most the edge.
        return Percentile(
            q=q, value=None, count=n, lower=0.0, upper=upper, method=METHOD, below_first_edge=upper
        )
    lower, below = bc.edges[index - 1], cumulative[index - 1]
    in_bucket = bc.counts[index]
    fraction = (rank - below) / in_bucket if in_bucket > 0 else 1.0
    value = lower + (upper - lower) * fraction
    return Percentile(q=q, value=value, count=n, lower=lower, upper=upper, method=METHOD)


def quantiles(bc: BucketCounts, qs: Sequence[float] = STANDARD_QUANTILES) -> list[Percentile]:
    return [quantile(bc, q) for q in qs]
