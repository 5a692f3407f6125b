"""PerfHub's own instruments (prometheus_client): ingest and pulls here, alert evaluation and
notifications in `alerts.instruments`; `/metrics` is served by `perfhub.metrics`.

Counters and histograms live in the process that does the work: gunicorn workers (ingest),
Celery workers (pulls, Prometheus sources, alert evaluation, notifications). With
PROMETHEUS_MULTIPROC_DIR set, every process on the machine writes its values there and
`/metrics` adds them up (prometheus_client's multiprocess mode); the files are named by host
name and pid, so containers sharing the directory never collide. Without it (the embedded
default: one process, tasks run eagerly) the values are the process's own. Gauges that describe
shared state (roll-up lag, queue depth) are read from the database and Redis at scrape time
instead, in `perfhub.metrics`.
"""

from __future__ import annotations

import os
import socket

from prometheus_client import Counter, Histogram, values

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    _process = f"{socket.gethostname().replace('_', '-')}-{{}}"
    values.ValueClass = values.MultiProcessValue(lambda: _process.format(os.getpid()))

INGEST_BATCHES = Counter(
    "perfhub_ingest_batches",
    "Ingest batches by how they entered (api, pull, prometheus) and their outcome.",
    ["via", "outcome"],
)
INGEST_SAMPLES = Counter(
    "perfhub_ingest_samples",
    "Samples in ingested batches by kind (gpus, requests, scrapes, windows) and outcome "
    "(stored; a duplicate batch stores nothing; a rejected batch is refused whole).",
    ["via", "kind", "outcome"],
)
INGEST_SECONDS = Histogram(
    "perfhub_ingest_duration_seconds",
    "Time to answer an ingest API call, validation and storage included.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)
PULL_ERRORS = Counter(
    "perfhub_pull_errors",
    "Failed pulls of a host's URL (kind=host) or of a Prometheus source (kind=prometheus).",
    ["kind"],
)


def record_ingest(*, via: str, outcome: str, counts: dict[str, int] | None = None) -> None:
    INGEST_BATCHES.labels(via, outcome).inc()
    for kind, count in (counts or {}).items():
        INGEST_SAMPLES.labels(via, kind, "stored" if outcome == "accepted" else outcome).inc(count)
