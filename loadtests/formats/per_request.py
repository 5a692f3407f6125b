"""Per-request arrays -> the statistics PerfHub stores, the same way for every format.

A parser hands over what the file holds per request (`ParsedRun.samples`: milliseconds per
family "ttft", "tpot", "itl", "e2e", successful requests only) and never computes a percentile
from them itself. This module is the one place that does: one DDSketch per family (what the
import stores as `LoadTestSketch` and the gate merges), and from it the latency columns of a
metric the file states no percentile for (a tool that writes only per-request arrays). Where the
tool wrote its own percentiles they stand, and the ones it left out stay missing: one metric's
columns never mix the tool's exact figures with sketch estimates. A percentile is only taken
where the samples hold enough requests for it (`minimum_count`), so a P99.9 is never read off
50 requests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ddsketch import DDSketch

from analysis import sketches
from analysis.percentiles import (
    LATENCY_METRICS,
    PERCENTILE_LABELS,
    QUANTILE_OF,
    latency_field,
    minimum_count,
)


@dataclass(frozen=True)
class SampleStatistics:
    """One family's per-request values, summarized as stored: the sketch and its exact
    count, sum, min and max (milliseconds)."""

    family: str
    sketch: DDSketch
    count: int
    sum_ms: float
    min_ms: float | None
    max_ms: float | None

    def percentile_ms(self, label: str) -> float | None:
        """The sketch's `label` ("p99") in ms, or None below the requests it needs."""
        q = QUANTILE_OF[label]
        if self.count < minimum_count(q):
            return None
        return sketches.percentiles(self.sketch, [q])[0].value


def sample_statistics(samples: Mapping[str, Sequence[float]]) -> dict[str, SampleStatistics]:
    """A `SampleStatistics` per non-empty family; ValueError naming the family and index of a
    value that is not a finite number >= 0."""
    out = {}
    for family, values in samples.items():
        if not values:
            continue
        try:
            sketch = sketches.from_values(values)
        except ValueError as exc:
            raise ValueError(f"{family} samples: {exc}") from None
        summary = sketches.summary(sketch)
        out[family] = SampleStatistics(
            family=family,
            sketch=sketch,
            count=int(summary["count"]),
            sum_ms=float(summary["sum"]),
            min_ms=summary["min"],
            max_ms=summary["max"],
        )
    return out


def missing_latency_fields(
    fields: Mapping[str, float | int | None], stats: Mapping[str, SampleStatistics]
) -> dict[str, tuple[float, str]]:
    """{field: (value, where it came from)} for the `<metric>_<pXX>_ms` columns of each metric
    the file states no percentile for and the samples can fill."""
    out = {}
    for metric in LATENCY_METRICS:
        stat = stats.get(metric)
        names = {label: latency_field(metric, label) for label in PERCENTILE_LABELS}
        if stat is None or any(fields.get(name) is not None for name in names.values()):
            continue
        for label, name in names.items():
            value = stat.percentile_ms(label)
            if value is not None:
                source = f"{label} of {stat.count} per-request {metric} samples (DDSketch, ±1%)"
                out[name] = (value, source)
    return out
