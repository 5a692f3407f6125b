"""Celery tasks: thin wrappers that take ids and call the service functions."""

from __future__ import annotations

from celery import shared_task

from alerts import notifications, services


@shared_task(name="alerts.evaluate")
def evaluate() -> dict:
    """Beat, every minute: evaluate every due rule (a doubled beat finds nothing to do)."""
    report = services.evaluate_all()
    return {
        "evaluated_at": report.evaluated_at.isoformat(),
        "rules": report.rules,
        "notifications": len(report.notifications),
    }


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
