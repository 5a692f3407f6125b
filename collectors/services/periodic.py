"""The periodic jobs in one synchronous call, for the embedded default (no Redis, no beat).

Production runs the same work as Celery beat entries (see `collectors.tasks`); the demo
runner calls `run_periodic_jobs()` every few seconds in-process.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from collectors.services import prometheus, pull, retention, rollups

PRUNE_EVERY = timedelta(hours=1)
_last_prune: datetime | None = None


def run_periodic_jobs(now: datetime | None = None) -> dict:
    """Pull due targets, sync Prometheus sources, roll up pending batches, prune at most
    hourly. Returns what it did."""
    global _last_prune
    now = now or timezone.now()
    pulled = [pull.pull_host(host_id=host_id, now=now) for host_id in pull.due_pull_hosts(now=now)]
    synced = [
        prometheus.source_sync(source_id=source_id, now=now)
        for source_id in prometheus.due_sources(now=now)
    ]
    report: dict = {
        "pulled": len(pulled),
        "prometheus_synced": len(synced),
        "pull_failures": sum(1 for p in pulled if not p.ok),
        "rolled_up_batches": rollups.rollup_pending(now=now),
    }
    if _last_prune is None or now - _last_prune >= PRUNE_EVERY:
        report["pruned"] = retention.prune(now=now)
        _last_prune = now
    return report
