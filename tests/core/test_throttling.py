"""Rate limits (DRF throttles on the cache): login per client address, ingest per host, the
gate per token; over the rate, 429 with Retry-After."""

import pytest
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle

from collectors.services.tokens import token_issue_for_host_name
from loadtests.tokens import ci_token_issue
from tests.factories.batches import INGEST_URL, make_batch

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(monkeypatch, settings):
    """Small rates. SimpleRateThrottle read settings' rates once, into a class attribute;
    ingest reads PERFHUB_INGEST_RATE on each push."""
    rates = {"loadtests": "2/min", "gate": "1/min", "login": "3/min"}
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", rates)
    settings.PERFHUB_INGEST_RATE = "2/min"
    return rates


def token_client(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {plaintext}")
    return client


def test_login_attempts_over_the_rate_get_429_with_retry_after(client, owner, rates):
    for _ in range(3):
        client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 429
    assert 0 < int(response["Retry-After"]) <= 60
    assert "Too many login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session  # the right password did not log in


def test_ingest_is_limited_per_host(service, rates):
    _, first = token_issue_for_host_name(host_name="gpu-node-07")
    _, second = token_issue_for_host_name(host_name="gpu-node-08")
    client = token_client(first)
    statuses = [client.post(INGEST_URL, make_batch(), format="json").status_code for _ in range(3)]
    assert statuses == [202, 202, 429]
    throttled = client.post(INGEST_URL, make_batch(), format="json")
    assert int(throttled["Retry-After"]) > 0
    other = token_client(second).post(INGEST_URL, make_batch(host="gpu-node-08"), format="json")
    assert other.status_code == 202


def test_a_host_holding_two_tokens_during_a_rotation_has_one_ingest_budget(service, rates):
    _, old = token_issue_for_host_name(host_name="gpu-node-07")
    _, new = token_issue_for_host_name(host_name="gpu-node-07")
    answers = [
        token_client(plaintext).post(INGEST_URL, make_batch(), format="json").status_code
        for plaintext in (old, new, new)
    ]
    assert answers == [202, 202, 429]


def test_the_gate_is_limited_per_token(service, rates, fixtures_dir):
    _, plaintext = ci_token_issue(service=service)
    body = (fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json").read_bytes()
    client = token_client(plaintext)
    url = f"/api/v1/services/{service.slug}/gate/"
    first = client.post(url, body, content_type="application/json")
    assert first.status_code == 422  # judged (no baseline yet), not throttled
    second = client.post(url, body, content_type="application/json")
    assert second.status_code == 429
    assert int(second["Retry-After"]) > 0


def test_the_admin_login_is_limited_too(client, django_user_model, rates):
    django_user_model.objects.create_superuser("root", password="pw-root-123")
    for _ in range(3):
        client.post("/admin/login/", {"username": "root", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "root", "password": "pw-root-123"})
    assert response.status_code == 429
    assert int(response["Retry-After"]) > 0
    assert "Too many login attempts" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_the_login_page_and_the_admin_share_one_limit(client, owner, rates):
    for path in ("/accounts/login/", "/admin/login/", "/accounts/login/"):
        client.post(path, {"username": "alice", "password": "wrong"})
    response = client.post("/admin/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 429


def test_an_account_is_limited_whatever_address_the_guesses_come_from(client, owner, rates):
    for n in range(3):
        client.post(
            "/accounts/login/", {"username": "alice", "password": "wrong"},
            REMOTE_ADDR=f"203.0.113.{n + 1}",
        )  # fmt: skip
    response = client.post(
        "/accounts/login/", {"username": "ALICE ", "password": "pw-alice-123"},
        REMOTE_ADDR="203.0.113.99",
    )  # fmt: skip
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_an_address_is_limited_whatever_accounts_it_tries(client, owner, rates):
    for name in ("bob", "carol", "dave"):
        client.post("/accounts/login/", {"username": name, "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 429


def test_a_login_within_the_limit_still_works(client, owner, rates):
    client.post("/accounts/login/", {"username": "alice", "password": "wrong"})
    response = client.post("/accounts/login/", {"username": "alice", "password": "pw-alice-123"})
    assert response.status_code == 302
    assert client.session["_auth_user_id"] == str(owner.pk)
