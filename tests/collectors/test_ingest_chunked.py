"""Chunked pushes through a real server (gunicorn, which decodes Transfer-Encoding: chunked;
Django's test client and runserver cannot send or read one)."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests
from django.db import connection

from collectors.models import IngestBatch, RequestSample
from tests.factories.batches import INGEST_URL, make_batch

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 200_000

pytestmark = pytest.mark.postgres  # the server process must see the test's committed rows


@pytest.fixture(scope="module")
def server(django_db_setup):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgres://{db['USER']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "ALLOWED_HOSTS": "127.0.0.1",
        "PERFHUB_API_MAX_BYTES": str(LIMIT),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "perfhub.wsgi", "--bind", f"127.0.0.1:{port}",
         "--workers", "1", "--log-level", "warning"],
        cwd=ROOT, env=env,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                requests.get(base + INGEST_URL, timeout=10)
                break
            except requests.RequestException:
                time.sleep(0.1)
        yield base
    finally:
        process.terminate()
        process.wait(10)


def chunks(body: bytes, size: int = 1000):
    # A generator body makes requests send Transfer-Encoding: chunked, no Content-Length.
    for at in range(0, len(body), size):
        yield body[at : at + size]


def test_a_chunked_batch_is_read_and_stored(server, transactional_db, service, agent_token):
    body = make_batch()
    response = requests.post(
        server + INGEST_URL,
        data=chunks(json.dumps(body).encode()),
        headers={"Authorization": f"Token {agent_token}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 202, response.text
    assert response.json()["counts"]["requests"] == 3
    assert RequestSample.objects.count() == 3


def test_a_chunked_body_over_the_limit_is_a_json_413(
    server, transactional_db, service, agent_token
):
    response = requests.post(
        server + INGEST_URL,
        data=chunks(b" " * (LIMIT + 10_000)),
        headers={"Authorization": f"Token {agent_token}", "Content-Type": "application/json"},
        timeout=30,
    )
    assert response.status_code == 413
    assert response.json() == {"detail": f"Request body over the limit of {LIMIT:,} bytes."}
    assert not IngestBatch.objects.exists()
