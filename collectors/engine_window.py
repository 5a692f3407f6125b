"""A service's engine-side (server) figures over one stated window, from raw scrape windows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Max, Min

from analysis import buckets
from analysis.percentiles import STANDARD_QUANTILES, Percentile
from collectors.distributions import (
    SCRAPED_HISTOGRAM,
    Traffic,
    distribution_percentiles,
)
from collectors.models import (
    ScrapeWindow,
)
from dossiers.models import Service


@dataclass(frozen=True)
class EngineWindow:
    """A service's engine-side (server) figures over one stated window, from raw scrape
    windows: what the engine's own histograms and counters say, never request rows."""

    start: datetime  # the first whole minute covered
    end: datetime  # the end of the last whole minute covered
    windows: int  # scrape windows merged
    finished: float  # requests finished in any way
    errored: float
    aborted: float
    latency: dict[str, list[Percentile]]  # metric -> standard percentiles, ms, bucket-bounded


def engine_window(
    *, service: Service, start: datetime, end: datetime, qs=STANDARD_QUANTILES
) -> EngineWindow | None:
    """The engine's figures over the whole minutes touched by the scrape windows of `service`
    that overlap [start, end) (bucket deltas added over hosts and windows, then the
    percentiles), or None when no scrape overlaps. Raw rows, so within raw retention
    (`PERFHUB_RAW_RETENTION_DAYS`).

    Whole minutes, each scrape window in the minute its scrape ended, as the roll-ups file it:
    a live view of the same minutes then reads exactly these windows, so a claim checked over
    the run's window compares the same requests on both sides. Windows cut at the run's own
    seconds differed from the minutes at both edges (the benchmark's warm-up request, the
    last window ending past the minute), and a P99 moved by more than 15% between them."""
    touched = ScrapeWindow.objects.filter(service=service, ts__gt=start, start_ts__lt=end)
    span = touched.aggregate(first=Min("ts"), last=Max("ts"))
    if span["first"] is None:
        return None
    first = span["first"].replace(second=0, microsecond=0)
    last = span["last"].replace(second=0, microsecond=0) + timedelta(minutes=1)
    rows = list(
        ScrapeWindow.objects.filter(service=service, ts__gte=first, ts__lt=last).values_list(
            "counters", "histograms"
        )
    )
    traffic = Traffic()
    for counters, histograms in rows:
        traffic.scraped_requests += counters.get("requests_finished", 0.0)
        traffic.scraped_errors += counters.get("request_errors", 0.0)
        traffic.scraped_aborts += counters.get("request_aborts", 0.0)
        for metric, canonical in SCRAPED_HISTOGRAM.items():
            if histograms.get(canonical):
                traffic.buckets[metric].append(
                    buckets.BucketCounts.from_dict(histograms[canonical])
                )
    traffic.scraped_seconds = 1.0  # counters present: outcomes come from them
    finished, errored, aborted = traffic.outcomes
    return EngineWindow(
        start=first,
        end=last,
        windows=len(rows),
        finished=finished,
        errored=errored,
        aborted=aborted,
        latency={
            m: distribution_percentiles(None, traffic.merged_buckets(m), qs)
            for m in SCRAPED_HISTOGRAM
        },
    )
