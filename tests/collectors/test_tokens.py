from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.core.management import call_command
from django.utils import timezone

from collectors.models import AgentToken, Host
from collectors.services.tokens import token_authenticate, token_issue, token_revoke
from tests.collectors.conftest import INGEST_URL, make_batch

pytestmark = pytest.mark.django_db


def test_it_stores_only_a_prefix_and_an_hmac(host):
    token, plaintext = token_issue(host=host)
    token.refresh_from_db()
    assert plaintext not in (token.digest, token.prefix)
    assert token.prefix in plaintext
    assert len(token.digest) == 64
    assert plaintext.split("_", 2)[2] not in token.digest


def test_it_authenticates_the_plaintext_to_its_host(host):
    _, plaintext = token_issue(host=host)
    assert token_authenticate(plaintext).host == host


def test_it_rejects_a_token_with_a_wrong_secret(host):
    _, plaintext = token_issue(host=host)
    assert token_authenticate(plaintext[:-2] + "xx") is None


def test_it_rejects_a_revoked_token(host):
    token, plaintext = token_issue(host=host)
    token_revoke(token=token)
    assert token_authenticate(plaintext) is None


def test_it_writes_last_used_at_most_once_a_minute(host):
    token, plaintext = token_issue(host=host)
    start = timezone.now()
    token_authenticate(plaintext, now=start)
    token_authenticate(plaintext, now=start + timedelta(seconds=30))
    token.refresh_from_db()
    assert token.last_used_at == start
    token_authenticate(plaintext, now=start + timedelta(seconds=61))
    token.refresh_from_db()
    assert token.last_used_at == start + timedelta(seconds=61)


def test_it_skips_the_write_within_the_minute(host, django_assert_num_queries):
    _, plaintext = token_issue(host=host)
    with time_machine.travel(timezone.now(), tick=False):
        token_authenticate(plaintext)
        with django_assert_num_queries(1):  # the lookup only, no UPDATE
            token_authenticate(plaintext)


def test_the_command_creates_the_host_and_prints_the_token_once(capsys):
    call_command("create_agent_token", "--host", "gpu-node-99")
    out = capsys.readouterr().out.strip()
    host = Host.objects.get(name="gpu-node-99")
    assert token_authenticate(out).host == host
    assert not AgentToken.objects.filter(digest=out).exists()


def test_the_api_answers_401_without_a_token(client, service):
    response = client.post(INGEST_URL, make_batch(), content_type="application/json")
    assert response.status_code == 401


def test_the_api_answers_401_for_a_revoked_token(agent_client, agent_token, service):
    token_revoke(token=AgentToken.objects.get())
    response = agent_client.post(INGEST_URL, make_batch(), format="json")
    assert response.status_code == 401


def test_the_api_answers_403_for_another_hosts_batch(agent_client, service):
    Host.objects.create(name="gpu-node-08")
    response = agent_client.post(INGEST_URL, make_batch(host="gpu-node-08"), format="json")
    assert response.status_code == 403
    assert "gpu-node-07" in response.json()["detail"]


def test_the_token_auth_is_in_drf_defaults():
    classes = settings.REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]
    assert "collectors.authentication.AgentTokenAuthentication" in classes
