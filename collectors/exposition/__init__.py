"""Scraped Prometheus exposition text -> canonical series, window deltas, bucket quantiles.

Imports no Django: the ingest server, the pull tasks and tests call it with plain text.

    scrape = parse(text, "vllm")            # cumulative canonical series at one moment
    w = window(prev_scrape, scrape, 15.0)   # counters, rates, bucket counts, gauges
    quantiles(w.histograms["ttft_seconds"]) # from analysis.buckets: bucket-bounded P50..P999

Engine mappings are documented in `collectors.exposition.engines`, GPU fields in
`collectors.exposition.dcgm`.
"""

from collectors.exposition.engines import COUNTERS, GAUGES, HISTOGRAMS, sources
from collectors.exposition.scrape import (
    HistogramSeries,
    ParsedScrape,
    SeriesKey,
    metric_names,
    normalize_edge,
    parse,
    sources_reading,
)
from collectors.exposition.text import ExpositionError
from collectors.exposition.window import ScrapeWindow, window

__all__ = [
    "COUNTERS",
    "GAUGES",
    "HISTOGRAMS",
    "ExpositionError",
    "HistogramSeries",
    "ParsedScrape",
    "ScrapeWindow",
    "SeriesKey",
    "metric_names",
    "normalize_edge",
    "parse",
    "sources",
    "sources_reading",
    "window",
]
