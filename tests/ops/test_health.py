"""`/healthz` and `/readyz`: what a probe (compose, a load balancer) is told, without a login."""

import os
import time
import uuid
from datetime import timedelta

import pytest
from django.core.cache import cache
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from collectors.models import Host, IngestBatch
from perfhub import health
from perfhub.tasks import HEARTBEAT_KEY, heartbeat

pytestmark = pytest.mark.django_db

REDIS_URL = os.environ.get("REDIS_URL", "")
needs_redis = pytest.mark.skipif(not REDIS_URL, reason="needs Redis (set REDIS_URL)")
# As production runs: a broker, so beat and its heartbeat are expected.
WITH_BROKER = {"CELERY_TASK_ALWAYS_EAGER": False}


@pytest.fixture(autouse=True)
def _fresh_state():
    cache.delete(HEARTBEAT_KEY)
    health._migrations_complete = False
    yield
    cache.delete(HEARTBEAT_KEY)
    health._migrations_complete = False


def _ready(client) -> tuple[int, dict]:
    response = client.get("/readyz")
    assert response["Content-Type"] == "application/json"
    return response.status_code, response.json()


def _failing(body: dict) -> set[str]:
    return {name for name, check in body["checks"].items() if not check["ok"]}


def test_healthz_answers_ok_without_a_login(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


@needs_redis
@override_settings(**WITH_BROKER)
def test_readyz_is_ready_when_beat_was_seen_and_rollups_keep_up(client):
    heartbeat.apply()  # as a worker runs it when beat schedules it
    status, body = _ready(client)
    assert status == 200, body
    assert body["status"] == "ok"
    assert set(body["checks"]) == {"database", "broker", "cache", "migrations", "beat", "rollups"}
    assert _failing(body) == set()


@override_settings(**WITH_BROKER, CELERY_BROKER_URL=REDIS_URL or "memory://")
def test_readyz_fails_naming_beat_before_any_heartbeat(client):
    status, body = _ready(client)
    assert status == 503
    assert body["status"] == "unavailable"
    assert "beat" in _failing(body)
    assert body["checks"]["beat"]["detail"] == "no heartbeat yet"


@override_settings(**WITH_BROKER, CELERY_BROKER_URL=REDIS_URL or "memory://")
def test_readyz_fails_naming_beat_when_its_heartbeat_is_old(client, settings):
    cache.set(HEARTBEAT_KEY, time.time() - settings.PERFHUB_READY_BEAT_MAX_AGE_S - 30)
    status, body = _ready(client)
    assert status == 503
    assert _failing(body) == {"beat"}
    assert body["checks"]["beat"]["detail"].startswith("heartbeat 1")


def test_readyz_fails_naming_rollups_when_a_batch_waits_too_long(client, settings):
    cache.set(HEARTBEAT_KEY, time.time())
    host = Host.objects.create(name="gpu-node-07")
    batch = IngestBatch.objects.create(batch_id=uuid.uuid4(), host=host)
    waited = settings.PERFHUB_READY_ROLLUP_LAG_MAX_S + 60
    IngestBatch.objects.filter(pk=batch.pk).update(
        received_at=timezone.now() - timedelta(seconds=waited)
    )
    status, body = _ready(client)
    assert status == 503
    assert _failing(body) == {"rollups"}
    assert body["checks"]["rollups"]["detail"].startswith(f"lag {waited}")


def test_readyz_ignores_batches_already_rolled_up(client, settings):
    host = Host.objects.create(name="gpu-node-07")
    long_ago = timezone.now() - timedelta(days=1)
    batch = IngestBatch.objects.create(batch_id=uuid.uuid4(), host=host)
    IngestBatch.objects.filter(pk=batch.pk).update(received_at=long_ago, rolled_up_at=long_ago)
    _, body = _ready(client)
    assert body["checks"]["rollups"] == {"ok": True, "detail": "lag 0 s (bound 300 s)"}


def test_readyz_fails_naming_migrations_when_one_is_not_applied(client):
    cache.set(HEARTBEAT_KEY, time.time())
    with connection.cursor() as cursor:  # undone with the test's transaction
        cursor.execute(
            "DELETE FROM django_migrations WHERE app = 'alerts' AND name = "
            "(SELECT MAX(name) FROM django_migrations WHERE app = 'alerts')"
        )
    status, body = _ready(client)
    assert status == 503
    assert "migrations" in _failing(body)
    assert body["checks"]["migrations"]["detail"] == "1 migration(s) not applied"


@override_settings(**WITH_BROKER, CELERY_BROKER_URL="redis://:s3cret@127.0.0.1:1/0")
def test_readyz_fails_naming_the_broker_when_it_is_unreachable(client):
    cache.set(HEARTBEAT_KEY, time.time())
    status, body = _ready(client)
    assert status == 503
    assert "broker" in _failing(body)


@override_settings(**WITH_BROKER, CELERY_BROKER_URL="redis://:s3cret@127.0.0.1:1/0")
def test_readyz_reveals_no_url_password_or_error_text(client, settings):
    response = client.get("/readyz")
    text = response.content.decode()
    for secret in ("s3cret", "127.0.0.1", "redis://", settings.SECRET_KEY, "Error 111"):
        assert secret not in text
    assert response.json()["checks"]["broker"]["detail"] == "failed (the server log says why)"


def test_the_embedded_default_is_ready_without_broker_or_beat(client):
    with override_settings(CELERY_TASK_ALWAYS_EAGER=True):
        status, body = _ready(client)
    assert status == 200, body
    assert body["checks"]["broker"]["detail"] == "no broker: tasks run in-process"
    assert body["checks"]["beat"]["detail"] == "no beat: periodic jobs run in-process"


def test_beat_schedules_the_heartbeat_within_the_readiness_bound(settings):
    [every] = [
        e["schedule"]
        for e in settings.CELERY_BEAT_SCHEDULE.values()
        if e["task"] == "perfhub.heartbeat"
    ]
    assert every * 2 <= settings.PERFHUB_READY_BEAT_MAX_AGE_S
