"""CI tokens: scoped to a service (or a team's), with permissions; agent tokens refused on the
load-test and gate API; every write records its credential; shown once, stored as SHA-256."""

import hashlib
import io
from datetime import timedelta

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone
from rest_framework.test import APIClient

from collectors.services.tokens import token_issue_for_host_name
from dashboards.timeline import timeline
from dossiers.models import Baseline, Team
from loadtests.models import CIToken, GateRun, LoadTest
from loadtests.tokens import ci_token_authenticate, ci_token_issue, ci_token_revoke

pytestmark = pytest.mark.django_db

URL = "/api/v1/services/chat-7b/loadtests/"
GATE = "/api/v1/services/chat-7b/gate/"
INGEST = "/api/v1/ingest/"


@pytest.fixture
def c16(fixtures_dir) -> bytes:
    return (fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json").read_bytes()


def client_with(plaintext: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {plaintext}")
    return client


def post(client: APIClient, url: str, body: bytes):
    return client.post(url, body, content_type="application/json")


@pytest.fixture
def ci(service):
    """A CI token for chat-7b that may import and gate, not promote."""
    return ci_token_issue(service=service, label="release pipeline")


@pytest.fixture
def promoter(service):
    return ci_token_issue(service=service, can_promote=True, label="nightly baseline")


@pytest.fixture
def other_service(make_service):
    return make_service("ranker", team=Team.objects.create(slug="search", name="Search"))


def test_an_agent_token_gets_403_on_the_load_test_api_saying_why(service, c16):
    _, agent = token_issue_for_host_name(host_name="gpu-node-07")
    response = post(client_with(agent), URL + "?baseline=1", c16)
    assert response.status_code == 403
    assert "Agent tokens only push metrics" in response.json()["detail"]
    assert not LoadTest.objects.exists() and not Baseline.objects.exists()


def test_an_agent_token_gets_403_on_the_gate(service, c16):
    _, agent = token_issue_for_host_name(host_name="gpu-node-07")
    response = post(client_with(agent), GATE, c16)
    assert response.status_code == 403
    assert "CI token" in response.json()["detail"]
    assert not GateRun.objects.exists()


def test_a_ci_token_imports_and_the_run_records_it(ci, c16):
    token, plaintext = ci
    response = post(client_with(plaintext), URL, c16)
    assert response.status_code == 201
    assert LoadTest.objects.get().ci_token == token


def test_a_ci_token_for_another_service_is_refused(other_service, c16, service):
    _, plaintext = ci_token_issue(service=other_service)
    response = post(client_with(plaintext), URL, c16)
    assert response.status_code == 403
    assert "scoped to ranker, not chat-7b" in response.json()["detail"]


def test_a_team_token_reaches_every_service_of_its_team_only(service, other_service, c16):
    _, plaintext = ci_token_issue(team=service.team)
    assert post(client_with(plaintext), URL, c16).status_code == 201
    response = post(client_with(plaintext), "/api/v1/services/ranker/loadtests/", c16)
    assert response.status_code == 403


def test_promoting_needs_the_promote_permission(ci, c16):
    _, plaintext = ci
    response = post(client_with(plaintext), URL + "?baseline=1", c16)
    assert response.status_code == 403
    assert "may not promote a baseline" in response.json()["detail"]
    assert not Baseline.objects.exists() and not LoadTest.objects.exists()


def test_a_promotion_records_the_token_and_shows_it_on_the_timeline(promoter, service, c16):
    token, plaintext = promoter
    assert post(client_with(plaintext), URL + "?baseline=1", c16).status_code == 201
    baseline = Baseline.objects.get(is_current=True)
    assert baseline.promoted_via == token.credential_label
    assert f"phc_{token.prefix}" in baseline.promoted_via
    marker = next(m for m in timeline(service=service) if m.kind == "baseline")
    assert marker.detail == f"by {token.credential_label}"


def test_a_gate_run_records_its_token(promoter, service, c16):
    token, plaintext = promoter
    post(client_with(plaintext), URL + "?baseline=1", c16)
    response = post(client_with(plaintext), GATE, c16)
    assert response.status_code == 200
    gate_run = GateRun.objects.get()
    assert gate_run.ci_token == token and gate_run.candidate.ci_token == token


def test_a_token_without_the_gate_permission_cannot_run_it(service, c16):
    _, plaintext = ci_token_issue(service=service, can_gate=False)
    assert post(client_with(plaintext), GATE, c16).status_code == 403


def test_a_revoked_token_gets_401(ci, c16):
    token, plaintext = ci
    ci_token_revoke(token=token)
    assert post(client_with(plaintext), URL, c16).status_code == 401


def test_a_ci_token_cannot_push_metrics(ci):
    response = client_with(ci[1]).post(INGEST, {}, format="json")
    assert response.status_code == 403
    assert "agent token" in response.json()["detail"]


def test_it_is_stored_as_a_sha256_of_the_whole_token(ci):
    token, plaintext = ci
    token.refresh_from_db()
    assert token.digest == hashlib.sha256(plaintext.encode()).hexdigest()
    assert plaintext.startswith(f"phc_{token.prefix}_")
    assert not CIToken.objects.filter(digest=plaintext).exists()


def test_rotating_secret_key_revokes_no_ci_token(ci, settings):
    settings.SECRET_KEY = "rotated-" + "k" * 50
    assert ci_token_authenticate(ci[1]) == ci[0]


def test_last_use_is_written_at_most_once_a_minute(ci):
    token, plaintext = ci
    start = timezone.now()
    ci_token_authenticate(plaintext, now=start)
    ci_token_authenticate(plaintext, now=start + timedelta(seconds=30))
    token.refresh_from_db()
    assert token.last_used_at == start
    ci_token_authenticate(plaintext, now=start + timedelta(seconds=61))
    token.refresh_from_db()
    assert token.last_used_at == start + timedelta(seconds=61)


# --- the command ---


def test_the_command_prints_a_working_token_once(service):
    out, err = io.StringIO(), io.StringIO()
    call_command("create_ci_token", "--service", "chat-7b", "--can-promote", stdout=out, stderr=err)
    token = ci_token_authenticate(out.getvalue().strip())
    assert token.service == service and token.can_promote
    assert "shown once" in err.getvalue()


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        (["--service", "nope"], "unknown service 'nope'"),
        (["--team", "nope"], "unknown team 'nope'"),
        ([], "name the scope"),
        (["--service", "chat-7b", "--no-import", "--no-gate"], "at least one permission"),
    ],
)
def test_the_command_exits_2_on_bad_input(service, args, reason):
    with pytest.raises(CommandError, match=reason) as caught:
        call_command("create_ci_token", *args, stdout=io.StringIO())
    assert caught.value.returncode == 2


# --- the page ---


def test_a_member_creates_a_token_and_sees_it_once(owner_client, service):
    url = reverse("loadtests:ci_tokens", args=[service.slug])
    response = owner_client.post(
        url, {"label": "ci", "scope": "service", "can_import": "on", "can_gate": "on"}
    )
    assert response.status_code == 201
    plaintext = response.context["plaintext"]
    assert plaintext in response.content.decode()
    assert ci_token_authenticate(plaintext).created_by.username == "alice"
    again = owner_client.get(url).content.decode()
    assert plaintext not in again
    assert f"phc_{CIToken.objects.get().prefix}" in again


def test_a_member_revokes_a_token(owner_client, ci, service):
    token, plaintext = ci
    url = reverse("loadtests:ci_token_revoke", args=[service.slug, token.pk])
    assert owner_client.post(url).status_code == 302
    assert ci_token_authenticate(plaintext) is None


def test_outsiders_cannot_see_or_create_tokens(outsider_client, service):
    url = reverse("loadtests:ci_tokens", args=[service.slug])
    assert outsider_client.get(url).status_code == 403
    assert outsider_client.post(url, {"scope": "service", "can_gate": "on"}).status_code == 403
    assert not CIToken.objects.exists()
