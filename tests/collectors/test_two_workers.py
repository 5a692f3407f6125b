"""Horizontal workers (issue 14): two real Celery worker processes on Redis split the roll-up
queue, and no batch is rolled up twice.

Each worker logs one line per task with its return value (the batches it rolled up); across
both workers they add up to exactly the batches there were, and both took a share.
"""

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.db import connection

from collectors.models import Host, IngestBatch, ServiceRollup
from collectors.services.tokens import token_issue
from perfhub.celery import app
from tests.factories.batches import make_batch, push, recent_minute
from tests.support import drop_celery_connections

pytestmark = [pytest.mark.postgres]

BROKER = "redis://127.0.0.1:6379/5"
ROOT = Path(__file__).resolve().parents[2]
BATCHES = 24


def start_worker(name: str, log: Path) -> subprocess.Popen:
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": BROKER,
    }
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "perfhub", "worker", "-P", "solo", "-n",
         f"{name}@%h", "--without-gossip", "--without-mingle", "--without-heartbeat",
         "-l", "INFO", "--prefetch-multiplier", "1"],
        cwd=ROOT, env=env, stdout=log.open("w"), stderr=subprocess.STDOUT,
    )  # fmt: skip


def test_two_workers_split_the_rollups_and_take_no_batch_twice(transactional_db, service, tmp_path):
    from rest_framework.test import APIClient

    try:
        redis.Redis.from_url(BROKER).flushdb()
    except redis.ConnectionError:
        pytest.skip("needs Redis at 127.0.0.1:6379")
    # Three distinct minutes per host, read once: a push crossing a minute boundary must not
    # put two of a host's batches in one minute (one roll-up row fewer on a slow machine).
    minutes = [recent_minute(minutes_ago) for minutes_ago in (2, 3, 4)]
    for h in range(BATCHES // 3):
        client = APIClient()
        host = Host.objects.create(name=f"worker-host-{h}")
        client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(host=host)[1]}")
        for ts in minutes:
            push(client, make_batch(host=host.name, ts=ts))
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    workers = [start_worker("a", logs[0]), start_worker("b", logs[1])]
    saved = {k: app.conf[k] for k in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=BROKER, task_always_eager=False)
    drop_celery_connections()  # a producer pool an earlier test closed or pointed elsewhere
    try:
        # Both workers up before the queue fills, so both take a share.
        up = time.monotonic() + 60
        while time.monotonic() < up and not all("ready." in p.read_text() for p in logs):
            time.sleep(0.2)
        for _ in range(BATCHES + 8):  # more tasks than batches: some find nothing
            app.send_task("collectors.tasks.rollup_pending", kwargs={"limit": 1})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            # One JSON line per task (perfhub.logs), with the batches it rolled up as its result.
            done = [re.findall(r'"task": "collectors.tasks.rollup_pending".*?"result": (\d+)',
                               p.read_text()) for p in logs]  # fmt: skip
            if sum(len(d) for d in done) == BATCHES + 8:
                break
            time.sleep(0.5)
    finally:
        app.conf.update(saved)
        drop_celery_connections()
        for w in workers:
            w.terminate()
            w.wait(timeout=20)
    per_worker = [sum(int(n) for n in d) for d in done]
    assert sum(per_worker) == BATCHES, [p.read_text()[-2000:] for p in logs]
    assert all(n > 0 for n in per_worker), per_worker
    assert not IngestBatch.objects.filter(rolled_up_at__isnull=True).exists()
    assert ServiceRollup.objects.filter(resolution_s=60).count() == BATCHES
