"""Rate limits are counted atomically: however many clients race, no limit lets more than its
count through in a window. Against the real Redis (REDIS_URL, as in production) and against a
live server for a whole endpoint."""

from __future__ import annotations

import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest
import redis
import requests
from rest_framework.throttling import SimpleRateThrottle

from collectors.services.tokens import token_issue_for_host_name
from core import ratelimit
from tests.factories.batches import INGEST_URL, make_batch

CLIENTS = 16
REDIS_URL = os.environ.get("REDIS_URL")
needs_redis = pytest.mark.skipif(not REDIS_URL, reason="REDIS_URL not set")


@pytest.fixture
def redis_cache(settings):
    """The cache production uses: Redis, shared by every thread and process."""
    prefix = f"perfhub-test-{uuid.uuid4().hex[:8]}"
    settings.CACHES = {
        "default": {"BACKEND": ratelimit.REDIS_BACKEND, "LOCATION": REDIS_URL, "KEY_PREFIX": prefix}
    }
    yield
    client = redis.Redis.from_url(REDIS_URL)  # only this test's keys: the database is shared
    for key in client.scan_iter(f"{prefix}:*"):
        client.delete(key)


def _race(attempts: int, call) -> list:
    barrier = threading.Barrier(CLIENTS)

    def client(n: int) -> list:
        barrier.wait()  # all start together
        return [call() for _ in range(attempts // CLIENTS)]

    with ThreadPoolExecutor(CLIENTS) as pool:
        return [answer for answers in pool.map(client, range(CLIENTS)) for answer in answers]


@needs_redis
def test_sixteen_clients_on_redis_get_exactly_the_limit_through(redis_cache):
    key = f"race:{uuid.uuid4()}"
    answers = _race(400, lambda: ratelimit.hit(key, 120, 60))
    assert sum(answer is None for answer in answers) == 120


@needs_redis
def test_a_refused_attempt_on_redis_is_told_how_long_to_wait(redis_cache):
    key = f"wait:{uuid.uuid4()}"
    assert ratelimit.hit(key, 1, 60) is None
    wait = ratelimit.hit(key, 1, 60)
    assert 59 < wait <= 60


def test_sixteen_clients_on_the_process_cache_get_exactly_the_limit_through():
    key = f"race:{uuid.uuid4()}"
    answers = _race(400, lambda: ratelimit.hit(key, 120, 60))
    assert sum(answer is None for answer in answers) == 120


@needs_redis
@pytest.mark.postgres  # 16 concurrent writers: SQLite's one shared test connection cannot
@pytest.mark.django_db(transaction=True)
def test_sixteen_agents_racing_the_ingest_limit_of_a_live_server(
    live_server, service, settings, redis_cache
):
    settings.PERFHUB_INGEST_RATE = "20/min"
    _, plaintext = token_issue_for_host_name(host_name="gpu-node-07")
    headers = {"Authorization": f"Token {plaintext}"}

    def push() -> int:
        return requests.post(
            live_server.url + INGEST_URL, json=make_batch(requests=[]), headers=headers, timeout=30
        ).status_code

    statuses = _race(48, push)
    assert statuses.count(202) == 20
    assert statuses.count(429) == 28


@needs_redis
@pytest.mark.django_db(transaction=True)
def test_sixteen_guessers_racing_the_admin_login_of_a_live_server(
    live_server, django_user_model, monkeypatch, redis_cache
):
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"login": "5/min"})
    django_user_model.objects.create_superuser("root", password="pw-root-123")

    def guess() -> int:
        with requests.Session() as session:
            session.get(live_server.url + "/admin/login/", timeout=30)
            return session.post(
                live_server.url + "/admin/login/",
                data={"username": "root", "password": "wrong",
                      "csrfmiddlewaretoken": session.cookies["csrftoken"]},
                headers={"Referer": live_server.url + "/admin/login/"}, timeout=30,
            ).status_code  # fmt: skip

    statuses = _race(32, guess)
    assert statuses.count(200) == 5  # the form said "wrong password" five times
    assert statuses.count(429) == 27


@needs_redis
@pytest.mark.parametrize(("scope", "limit"), [("loadtests", 60), ("gate", 30)])
def test_sixteen_clients_racing_the_load_test_and_gate_throttles_on_redis(
    redis_cache, monkeypatch, scope, limit
):
    from types import SimpleNamespace

    from core.throttling import CredentialScopedThrottle

    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {scope: f"{limit}/min"})
    request = SimpleNamespace(auth=None, user=SimpleNamespace(is_authenticated=True, pk=7), META={})
    view = SimpleNamespace(throttle_scope=scope)
    answers = _race(160, lambda: CredentialScopedThrottle().allow_request(request, view))
    assert answers.count(True) == limit
