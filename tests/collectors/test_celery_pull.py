"""A real Celery worker on Redis performs a pull (no eager mode, no mocks).

`transactional_db`: the worker runs in its own thread with its own database connection, so
the host it reads must be committed, not inside the test's transaction.
"""

import time

import pytest
import redis
from celery.contrib.testing.worker import start_worker
from celery.signals import task_postrun
from django.db import connection

from collectors import tasks
from collectors.models import Host, ScrapeWindow
from perfhub.celery import app
from tests.support import Served, drop_celery_connections

BROKER = "redis://127.0.0.1:6379/7"


@pytest.fixture
def redis_worker(settings):
    try:
        redis.Redis.from_url(BROKER).ping()
    except redis.ConnectionError:
        pytest.skip("needs Redis at 127.0.0.1:6379")
    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager", "result_backend")}
    app.conf.update(broker_url=BROKER, task_always_eager=False, result_backend=None)
    drop_celery_connections()
    # The worker thread's database connection would outlive the test (CONN_MAX_AGE) and block
    # the test database's teardown: close it after each task, in the worker's own thread.
    task_postrun.connect(_close_connection)
    try:
        with start_worker(app, pool="solo", perform_ping_check=False, shutdown_timeout=10):
            yield
    finally:
        task_postrun.disconnect(_close_connection)
    app.conf.update(saved)
    drop_celery_connections()


def _close_connection(**_) -> None:
    connection.close()


def wait_for(predicate, timeout=15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False


def test_a_worker_pulls_a_vllm_target_twice_into_a_window(
    transactional_db, redis_worker, service, vllm_texts, outbound_loopback
):
    served = Served()
    try:
        host = Host.objects.create(
            name="worker-pulled", pull_url=served.url, pull_kind="vllm", pull_service=service
        )
        served.body = vllm_texts[0].encode()
        tasks.pull_host.delay(host.pk)
        assert wait_for(lambda: Host.objects.get(pk=host.pk).status == "up")
        served.body = vllm_texts[1].encode()
        tasks.pull_host.delay(host.pk)
        assert wait_for(ScrapeWindow.objects.exists)
        assert ScrapeWindow.objects.get().counters["requests_finished"] == pytest.approx(180)
    finally:
        served.close()
