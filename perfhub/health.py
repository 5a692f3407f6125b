"""Health endpoints for probes: `/healthz` (the process answers) and `/readyz` (it can work).

Both are JSON and need no login, so they say only what a probe needs: per check, ok or not,
and a short reason in PerfHub's own words (an age, a count), never an exception's text, a
host name, a URL or a version. `/readyz` answers 503 when any check fails:

- database: a query answers;
- broker: Celery's broker (Redis) accepts a connection (the embedded default has none);
- cache: the cache (Redis) stores and returns a value;
- migrations: every migration the code has is applied;
- beat: the heartbeat beat schedules and a worker writes is recent;
- rollups: the oldest ingested batch not yet rolled up is younger than a bound.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import JsonResponse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe
from kombu import Connection

from collectors.models import IngestBatch
from perfhub.tasks import HEARTBEAT_KEY

log = logging.getLogger(__name__)
BROKER_TIMEOUT_S = 2


@dataclass(frozen=True)
class Check:
    ok: bool
    detail: str = ""


def check_database() -> Check:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT 1")
    return Check(True)


def _embedded() -> bool:
    return bool(settings.CELERY_TASK_ALWAYS_EAGER)


def check_broker() -> Check:
    if _embedded():
        return Check(True, "no broker: tasks run in-process")
    with Connection(settings.CELERY_BROKER_URL, connect_timeout=BROKER_TIMEOUT_S) as conn:
        # One attempt, no back-off: a probe must answer quickly.
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0)
    return Check(True)


def check_cache() -> Check:
    cache.set("readyz-probe", 1, timeout=10)
    stored = cache.get("readyz-probe") == 1
    return Check(stored, "" if stored else "a stored value did not come back")


# Applied migrations stay applied while a process runs: once seen complete, not read again.
_migrations_complete = False


def check_migrations() -> Check:
    global _migrations_complete
    if _migrations_complete:
        return Check(True)
    executor = MigrationExecutor(connections[DEFAULT_DB_ALIAS])
    plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    if plan:
        return Check(False, f"{len(plan)} migration(s) not applied")
    _migrations_complete = True
    return Check(True)


def check_beat() -> Check:
    if _embedded():
        return Check(True, "no beat: periodic jobs run in-process")
    seen = cache.get(HEARTBEAT_KEY)
    if seen is None:
        return Check(False, "no heartbeat yet")
    age = max(0.0, time.time() - float(seen))
    bound = settings.PERFHUB_READY_BEAT_MAX_AGE_S
    return Check(age <= bound, f"heartbeat {age:.0f} s ago (bound {bound} s)")


def check_rollups() -> Check:
    oldest = (
        IngestBatch.objects.filter(rolled_up_at__isnull=True)
        .order_by("id")
        .values_list("received_at", flat=True)
        .first()
    )
    lag = 0.0 if oldest is None else max(0.0, (timezone.now() - oldest).total_seconds())
    bound = settings.PERFHUB_READY_ROLLUP_LAG_MAX_S
    return Check(lag <= bound, f"lag {lag:.0f} s (bound {bound} s)")


CHECKS: dict[str, Callable[[], Check]] = {
    "database": check_database,
    "broker": check_broker,
    "cache": check_cache,
    "migrations": check_migrations,
    "beat": check_beat,
    "rollups": check_rollups,
}
# Checks that read the database are not run when it is unreachable (they could only fail).
NEEDS_DATABASE = {"migrations", "rollups"}


def readiness() -> dict[str, Check]:
    """Every check, each failure caught and reported without its exception's text."""
    results: dict[str, Check] = {}
    for name, check in CHECKS.items():
        if name in NEEDS_DATABASE and not results["database"].ok:
            results[name] = Check(False, "database unreachable")
            continue
        try:
            results[name] = check()
        except Exception as exc:  # a probe reports failures, it never raises
            log.warning("readyz: %s check failed: %r", name, exc)
            results[name] = Check(False, "failed (the server log says why)")
    return results


@never_cache
@require_safe
def healthz(request):
    return JsonResponse({"status": "ok"})


@never_cache
@require_safe
def readyz(request):
    results = readiness()
    ready = all(c.ok for c in results.values())
    body = {
        "status": "ok" if ready else "unavailable",
        "checks": {name: {"ok": c.ok, "detail": c.detail} for name, c in results.items()},
    }
    return JsonResponse(body, status=200 if ready else 503)
