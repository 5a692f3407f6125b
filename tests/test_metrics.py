"""PerfHub's own /metrics: what it counts, who may read it, and that promtool and the real
Prometheus accept it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from collectors.models import Host
from collectors.services.tokens import token_issue
from deploy.stack import wait_for
from perfhub.metrics import instruments_text
from tests.factories.batches import make_batch
from tests.promstack import binary, start_prometheus

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[1]


def value(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
                return sample.value
    return 0.0


def scrape(client) -> str:
    response = client.get("/metrics")
    assert response.status_code == 200
    return response.content.decode()


@pytest.fixture
def agent(service) -> APIClient:
    host = Host.objects.create(name="gpu-node-07")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token_issue(host=host)[1]}")
    return client


def test_ingest_batches_are_counted_by_outcome(client, agent):
    before = scrape(client)
    batch = make_batch()
    assert agent.post("/api/v1/ingest/", batch, format="json").status_code == 202
    assert agent.post("/api/v1/ingest/", batch, format="json").status_code == 200
    assert agent.post("/api/v1/ingest/", {"batch_id": "x"}, format="json").status_code == 400
    after = scrape(client)
    for outcome in ("accepted", "duplicate", "rejected"):
        name = "perfhub_ingest_batches_total"
        assert (
            value(after, name, via="api", outcome=outcome)
            == value(before, name, via="api", outcome=outcome) + 1
        ), outcome
    stored = value(after, "perfhub_ingest_samples_total", via="api", kind="requests")
    assert stored - value(before, "perfhub_ingest_samples_total", via="api", kind="requests") == 3
    assert value(after, "perfhub_ingest_duration_seconds_count") >= 3


def test_rollup_lag_reports_the_oldest_batch_waiting(client, agent):
    agent.post("/api/v1/ingest/", make_batch(), format="json")
    text = scrape(client)
    assert value(text, "perfhub_rollup_pending_batches") == 1
    assert value(text, "perfhub_rollup_lag_seconds") >= 0
    assert value(text, "perfhub_quarantined_batches") == 0


def test_the_celery_queue_depth_is_read_from_redis(client, settings):
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL (the embedded default has no queue)")
    import redis

    broker = redis.Redis.from_url(settings.REDIS_URL)
    broker.delete("celery")
    broker.rpush("celery", "a", "b")
    try:
        assert value(scrape(client), "perfhub_celery_queue_length", queue="celery") == 2
    finally:
        broker.delete("celery")


def test_promtool_accepts_the_exposition(client, agent):
    agent.post("/api/v1/ingest/", make_batch(), format="json")
    checked = subprocess.run(
        [binary("promtool"), "check", "metrics"],
        input=scrape(client),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_outside_the_allow_list_a_token_is_needed(client, settings):
    settings.PERFHUB_METRICS_ALLOW = ["10.0.0.0/8"]
    settings.PERFHUB_METRICS_TOKEN = "s3cret"
    assert client.get("/metrics").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 403
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer s3cret").status_code == 200
    assert client.get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200


def test_without_a_token_only_the_allow_list_reads(client, settings):
    settings.PERFHUB_METRICS_ALLOW = ["10.0.0.0/8"]
    settings.PERFHUB_METRICS_TOKEN = ""
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer ").status_code == 403


# A process that records one accepted batch (the instruments need no Django).
COUNT_ONE_BATCH = (
    "from collectors.instruments import record_ingest; "
    "record_ingest(via='api', outcome='accepted', counts={'gpus': 3})"
)


def test_in_multiprocess_mode_every_process_counts(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    for _ in range(2):  # two gunicorn workers, say
        subprocess.run([sys.executable, "-c", COUNT_ONE_BATCH], check=True, cwd=ROOT)
    text = instruments_text().decode()  # what /metrics adds up from the shared directory
    assert value(text, "perfhub_ingest_batches_total", via="api", outcome="accepted") == 2
    assert value(text, "perfhub_ingest_samples_total", kind="gpus", outcome="stored") == 6


# gunicorn's master loads the application, the instruments included, then forks its workers
# (preload_app): each child must count in a file of its own, not in the master's.
COUNT_IN_FORKED_WORKERS = """
import os
from collectors.instruments import record_ingest
for _ in range(2):
    if os.fork() == 0:
        record_ingest(via='api', outcome='accepted', counts={'gpus': 3})
        os._exit(0)
    os.wait()
"""


def test_workers_forked_from_a_master_that_loaded_the_instruments_each_count(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    subprocess.run([sys.executable, "-c", COUNT_IN_FORKED_WORKERS], check=True, cwd=ROOT)
    text = instruments_text().decode()
    assert value(text, "perfhub_ingest_batches_total", via="api", outcome="accepted") == 2


@pytest.mark.django_db(transaction=True)
def test_the_real_prometheus_scrapes_it(live_server, tmp_path, settings):
    settings.PERFHUB_METRICS_TOKEN = "s3cret"
    settings.PERFHUB_METRICS_ALLOW = []
    target = live_server.url.removeprefix("http://")
    config = f"""
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: perfhub
    authorization:
      credentials: s3cret
    static_configs:
      - targets: ["{target}"]
"""
    prom = start_prometheus(tmp_path, config)
    try:

        def up() -> bool:
            answer = requests.get(
                prom.url + "/api/v1/query", params={"query": 'up{job="perfhub"}'}, timeout=2
            ).json()
            result = answer["data"]["result"]
            return bool(result) and result[0]["value"][1] == "1"

        wait_for("Prometheus to scrape PerfHub (up == 1)", up, timeout=20, every=0.2)
        answer = requests.get(
            prom.url + "/api/v1/query", params={"query": "perfhub_quarantined_batches"}, timeout=2
        ).json()
        assert answer["data"]["result"][0]["value"][1] == "0"
    finally:
        prom.stop()
