"""Celery tasks: thin wrappers that take ids and call the service functions."""

from __future__ import annotations

from datetime import datetime

from celery import shared_task
from django.utils import timezone

from alerts import notifications, services


def _summary(report: services.EvaluationReport) -> dict:
    return {
        "evaluated_at": report.evaluated_at.isoformat(),
        "rules": report.rules,
        "notifications": len(report.notifications),
    }


@shared_task(name="alerts.evaluate")
def evaluate() -> dict:
    """Beat, every minute: evaluate every due rule (a doubled beat finds nothing to do). With
    `PERFHUB_ALERTS_SHARDS` above 1, enqueue one shard task each instead, for the minute the
    beat fired in, so that many workers share it."""
    shards = services.evaluation_shards()
    if shards == 1:
        return _summary(services.evaluate_all())
    at = services.align_to_minute(timezone.now()).isoformat()
    for k in range(shards):
        evaluate_shard.delay(at, k, shards)
    return {"evaluated_at": at, "shards": shards}


@shared_task(name="alerts.evaluate_shard")
def evaluate_shard(at: str, k: int, n: int) -> dict:
    """Evaluate the due rules of shard k of n (services whose id is k modulo n) at `at`."""
    return _summary(services.evaluate_all(datetime.fromisoformat(at), shard=(k, n)))


@shared_task(
    bind=True,
    name="alerts.send_notification",
    autoretry_for=(notifications.DeliveryError,),
    retry_backoff=10,
    retry_backoff_max=600,
    retry_jitter=True,
    max_retries=6,
)
def send_notification(self, notification_id: int) -> str:
    """Send one notification; failures are recorded on the row and retried with backoff."""
    final = self.request.retries >= self.max_retries
    return notifications.deliver(notification_id, final_attempt=final)


@shared_task(name="alerts.requeue_stuck_notifications")
def requeue_stuck_notifications() -> int:
    """Beat, every 5 minutes: re-send notifications a lost message or dead worker left behind."""
    return len(notifications.requeue_stuck())
