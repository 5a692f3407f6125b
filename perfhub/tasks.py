"""The beat heartbeat: beat schedules it, a worker runs it, `/readyz` reads what it wrote."""

from __future__ import annotations

import time

from celery import shared_task
from django.core.cache import cache

HEARTBEAT_KEY = "beat-heartbeat"


@shared_task(name="perfhub.heartbeat", ignore_result=True)
def heartbeat() -> float:
    """Record when beat was last seen (through a worker, so both are alive)."""
    now = time.time()
    cache.set(HEARTBEAT_KEY, now, timeout=None)
    return now
