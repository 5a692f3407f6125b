import hashlib
import hmac
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.core.management import CommandError, call_command
from django.utils import timezone

from collectors.models import AgentToken, Host, IngestBatch
from collectors.services.tokens import token_authenticate, token_issue, token_revoke
from tests.factories.batches import INGEST_URL, make_batch

pytestmark = pytest.mark.django_db


def test_it_stores_only_a_prefix_and_a_sha256(host):
    token, plaintext = token_issue(host=host)
    token.refresh_from_db()
    assert plaintext not in (token.digest, token.prefix)
    assert token.prefix in plaintext
    assert token.digest == hashlib.sha256(plaintext.encode()).hexdigest()
    assert token.digest_kind == AgentToken.DigestKind.SHA256


def test_rotating_secret_key_revokes_no_token(host, settings):
    _, plaintext = token_issue(host=host)
    settings.SECRET_KEY = "a-brand-new-key-" + "x" * 40
    assert token_authenticate(plaintext).host == host


def _legacy_token(host, key: str) -> tuple[AgentToken, str]:
    """A token as stored before digests left SECRET_KEY: an HMAC keyed with it."""
    token, plaintext = token_issue(host=host)
    digest = hmac.new(key.encode(), plaintext.encode(), hashlib.sha256).hexdigest()
    AgentToken.objects.filter(pk=token.pk).update(
        digest=digest, digest_kind=AgentToken.DigestKind.LEGACY_HMAC
    )
    return token, plaintext


def test_a_token_issued_under_the_old_hmac_still_works_and_is_rehashed(host, settings):
    token, plaintext = _legacy_token(host, settings.SECRET_KEY)
    assert token_authenticate(plaintext).host == host
    token.refresh_from_db()
    assert token.digest_kind == AgentToken.DigestKind.SHA256
    assert token.digest == hashlib.sha256(plaintext.encode()).hexdigest()
    settings.SECRET_KEY = "rotated-after-the-first-use-" + "y" * 30
    assert token_authenticate(plaintext).host == host


def test_an_old_hmac_token_is_accepted_under_a_fallback_key(host, settings):
    old_key = settings.SECRET_KEY
    _, plaintext = _legacy_token(host, old_key)
    settings.SECRET_KEY = "rotated-before-the-first-use-" + "z" * 30
    settings.SECRET_KEY_FALLBACKS = [old_key]
    assert token_authenticate(plaintext).host == host


def test_an_old_hmac_token_with_a_wrong_secret_is_refused_and_kept(host, settings):
    token, plaintext = _legacy_token(host, settings.SECRET_KEY)
    assert token_authenticate(plaintext[:-2] + "xx") is None
    token.refresh_from_db()
    assert token.digest_kind == AgentToken.DigestKind.LEGACY_HMAC


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


@pytest.mark.parametrize("name", ["", "   ", "h" * 201])
def test_the_command_exits_2_on_a_host_name_it_cannot_store(name):
    with pytest.raises(CommandError, match="--host") as refused:
        call_command("create_agent_token", "--host", name)
    assert (refused.value.returncode, Host.objects.exists()) == (2, False)


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


def test_a_session_is_no_credential_for_ingest(client, owner, service):
    client.force_login(owner)
    response = client.post(INGEST_URL, make_batch(), content_type="application/json")
    assert response.status_code == 401


def test_an_unknown_kind_of_token_is_refused_with_401(client, service):
    response = client.post(
        INGEST_URL,
        make_batch(),
        content_type="application/json",
        HTTP_AUTHORIZATION="Token xyz_1234_secret",
    )
    assert response.status_code == 401
    assert response.json() == {"detail": "Invalid or revoked token."}


def test_each_batch_records_the_token_that_pushed_it(agent_client, agent_token, service):
    response = agent_client.post(INGEST_URL, make_batch(), format="json")
    assert response.status_code == 202
    assert IngestBatch.objects.get().token == AgentToken.objects.get()


def test_the_token_auth_is_in_drf_defaults():
    classes = settings.REST_FRAMEWORK["DEFAULT_AUTHENTICATION_CLASSES"]
    assert "collectors.authentication.AgentTokenAuthentication" in classes
