"""Celery tasks: take ids and call a service, which holds the logic (scheduled by beat)."""

from __future__ import annotations

from celery import shared_task

from collectors import partitions
from collectors.services import prometheus, pull, retention, rollups


@shared_task(name="collectors.tasks.rollup_pending", ignore_result=True)
def rollup_pending(limit: int = 1000) -> int:
    """Claim up to `limit` batches and roll them up; any number of workers may run this at
    once (batches are claimed with SKIP LOCKED + a conditional update, never twice)."""
    return rollups.rollup_pending(limit=limit)


@shared_task(name="collectors.tasks.prune", ignore_result=True)
def prune() -> dict:
    return retention.prune()


@shared_task(name="collectors.tasks.ensure_partitions", ignore_result=True)
def ensure_partitions() -> list[str]:
    """Hourly: the raw tables' daily partitions for the days ahead (PostgreSQL only)."""
    return partitions.ensure_partitions()


@shared_task(name="collectors.tasks.schedule_pulls", ignore_result=True)
def schedule_pulls() -> int:
    """One task per due target, so a slow or dead target never delays the others."""
    host_ids = pull.due_pull_hosts()
    for host_id in host_ids:
        pull_host.delay(host_id)
    return len(host_ids)


@shared_task(
    name="collectors.tasks.pull_host",
    bind=True,
    autoretry_for=(pull.PullError,),
    retry_backoff=2,
    retry_backoff_max=10,
    max_retries=2,
    soft_time_limit=30,
    time_limit=45,
    acks_late=True,
)
def pull_host(self, host_id: int) -> dict:
    """Pull one target. A failure is recorded on the host (down + error), then retried."""
    outcome = pull.pull_host(host_id=host_id)
    if not outcome.ok:
        raise pull.PullError(outcome.error)
    return {"host_id": host_id, "counts": outcome.result.counts if outcome.result else {}}


@shared_task(name="collectors.tasks.schedule_prometheus_sources", ignore_result=True)
def schedule_prometheus_sources() -> int:
    """One task per due Prometheus source, like the pulls."""
    source_ids = prometheus.due_sources()
    for source_id in source_ids:
        sync_prometheus_source.delay(source_id)
    return len(source_ids)


@shared_task(
    name="collectors.tasks.sync_prometheus_source",
    soft_time_limit=120,
    time_limit=150,
    acks_late=True,
)
def sync_prometheus_source(source_id: int) -> dict:
    """Read one source's new steps. Errors are recorded on the source; the next interval retries."""
    outcome = prometheus.source_sync(source_id=source_id)
    return {"source_id": source_id, "ok": outcome.ok, "steps": outcome.steps}
