"""The periodic jobs in one synchronous call, for the embedded default (no Redis, no beat).

Production runs the same work as Celery beat entries (see `collectors.tasks`); the demo
runner calls `run_periodic_jobs()` every few seconds in-process.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.utils import timezone

from collectors.services import prometheus, pull, retention, rollups

PRUNE_EVERY = timedelta(hours=1)
_last_prune: datetime | None = None
log = logging.getLogger(__name__)


def run_periodic_jobs(now: datetime | None = None) -> dict:
    """Pull due targets, sync Prometheus sources, roll up pending batches, prune at most
    hourly. Returns what it did.

    Each job runs whatever the others did: a failing job is logged and reported, never raised.
    """
    global _last_prune
    now = now or timezone.now()
    report: dict = {"errors": {}}
    try:
        pulled = [pull.pull_host(host_id=h, now=now) for h in pull.due_pull_hosts(now=now)]
        report["pulled"] = len(pulled)
        report["pull_failures"] = sum(1 for p in pulled if not p.ok)
    except Exception as exc:
        log.exception("pulls failed")
        report["errors"]["pull"] = str(exc)
    try:
        synced = [
            prometheus.source_sync(source_id=source_id, now=now)
            for source_id in prometheus.due_sources(now=now)
        ]
        report["prometheus_synced"] = len(synced)
    except Exception as exc:
        log.exception("Prometheus sources failed")
        report["errors"]["prometheus"] = str(exc)
    try:
        rolled = rollups.rollup_pending_report(now=now)
        report["rolled_up_batches"] = rolled.rolled_up
        report["quarantined_batches"] = len(rolled.quarantined)
    except Exception as exc:
        log.exception("roll-ups failed")
        report["errors"]["rollup"] = str(exc)
    if _last_prune is None or now - _last_prune >= PRUNE_EVERY:
        try:
            report["pruned"] = retention.prune(now=now)
        except Exception as exc:
            log.exception("retention failed")
            report["errors"]["prune"] = str(exc)
        _last_prune = now
    return report
