"""GET /api/v1/services/<slug>/plan/: the command's JSON; 400 names a bad field; 422 no sweep."""

import pytest

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
