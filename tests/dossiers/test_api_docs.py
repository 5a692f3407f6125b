"""The API docs and schema: behind a login unless PERFHUB_PUBLIC_API_DOCS; Redoc from the
sidecar's local copy; nothing from a CDN."""

import re

import pytest

pytestmark = pytest.mark.django_db


def test_anonymous_visitors_are_sent_to_login_from_the_docs(client):
    response = client.get("/api/docs/")
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/")


def test_anonymous_visitors_get_no_schema(client):
    response = client.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code in (401, 403)
    assert "paths" not in response.content.decode()


def test_the_docs_load_swagger_ui_from_this_site_only(client, owner):
    client.force_login(owner)
    html = client.get("/api/docs/").content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", html)
    assert "<script>" not in html  # no inline script: the start-up script has its own URL
    script = client.get("/api/docs/?script=")
    assert script["Content-Type"].startswith("application/javascript")
    assert "/api/schema/" in script.content.decode()


def test_a_setting_opens_the_docs_and_schema_to_anonymous_visitors(client, settings):
    settings.PERFHUB_PUBLIC_API_DOCS = True
    assert client.get("/api/docs/").status_code == 200
    assert "paths" in client.get("/api/schema/", HTTP_ACCEPT="application/json").json()


def test_every_page_of_a_signed_in_user_links_to_the_api_docs(client, owner):
    client.force_login(owner)
    assert 'href="/api/docs/">API reference</a>' in client.get("/").content.decode()
