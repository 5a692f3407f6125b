"""GET /api/v1/ answers with where the docs are and which routes exist."""

import pytest

pytestmark = pytest.mark.django_db


def test_api_root_lists_the_ingest_route_and_the_docs(client):
    body = client.get("/api/v1/").json()

    assert "/api/v1/ingest/" in body["endpoints"]
    assert body["docs"].endswith("/api/docs/")


def test_api_root_spells_parameters_as_the_openapi_docs_do(client):
    endpoints = client.get("/api/v1/").json()["endpoints"]

    assert "/api/v1/services/{slug}/plan/" in endpoints


def test_api_root_refuses_a_post_in_json(client):
    response = client.post("/api/v1/", {}, content_type="application/json")

    assert response.status_code == 405
    assert "detail" in response.json()
