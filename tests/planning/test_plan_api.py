"""GET /api/v1/services/<slug>/plan/: the command's JSON; 400 names a bad field; 422 no sweep."""

import pytest

from tests.factories.catalog import bare_service

pytestmark = pytest.mark.django_db


def url(slug: str) -> str:
    return f"/api/v1/services/{slug}/plan/"


def test_the_plan_is_read_with_the_command_shape(client, owner, swept):
    client.force_login(owner)
    response = client.get(url(swept.slug), {"slo": "ttft_p99_ms=300", "load": "10"})
    assert response.status_code == 200
    assert response.json()["per_replica"]["limited_by"] == "ttft_p99_ms"


def test_a_bad_field_answers_400_naming_it(client, owner, swept):
    client.force_login(owner)
    response = client.get(url(swept.slug), {"growth": "lots"})
    assert response.status_code == 400 and response.json()["detail"].startswith("growth")


def test_a_service_without_sweep_answers_422(client, owner, service):
    client.force_login(owner)
    response = client.get(url(service.slug))
    assert response.status_code == 422 and "no usable sweep" in response.json()["detail"]


def test_anonymous_readers_are_refused(client, swept):
    assert client.get(url(swept.slug)).status_code in (401, 403)


def token_get(plaintext: str, slug: str):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {plaintext}")
    return client.get(url(slug), {"load": "1"})


def test_a_ci_token_of_the_service_reads_its_plan(swept):
    from loadtests.tokens import ci_token_issue

    _, plaintext = ci_token_issue(service=swept)
    assert token_get(plaintext, swept.slug).status_code == 200


def test_a_ci_token_of_another_service_is_refused_saying_its_scope(swept, team):
    from loadtests.tokens import ci_token_issue

    other = bare_service(team, "other", engine="vllm", gpu_model="L4")
    _, plaintext = ci_token_issue(service=other)
    response = token_get(plaintext, swept.slug)
    assert response.status_code == 403 and "scoped to other" in response.json()["detail"]


def test_an_agent_token_is_refused(swept):
    from collectors.services.tokens import token_issue_for_host_name

    _, plaintext = token_issue_for_host_name(host_name="gpu-node-07")
    assert token_get(plaintext, swept.slug).status_code == 403
