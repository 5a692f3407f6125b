"""schemathesis against the served OpenAPI schema, with a valid agent token: whatever it sends,
no operation answers 5xx, and every answer is JSON (never an HTML error page).

Bounded (50 examples per operation) so `make test` stays quick; run alone with
`pytest -m fuzz`.
"""

import pytest
import schemathesis
from django.core import signals
from django.db import close_old_connections
from django.test import override_settings
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from collectors.models import Host
from collectors.services.tokens import token_issue
from perfhub.wsgi import application

pytestmark = [pytest.mark.django_db, pytest.mark.fuzz]

# Served by the app itself, as a client would fetch it (no database needed to build it).
# (The schema is behind a login unless PERFHUB_PUBLIC_API_DOCS: opened here for the loader.)
with override_settings(PERFHUB_PUBLIC_API_DOCS=True):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", application)


@pytest.fixture
def agent_token(service) -> str:
    return token_issue(host=Host.objects.create(name="fuzz-host"))[1]


@pytest.fixture(autouse=True)
def _keep_the_test_connection(settings):
    settings.PERFHUB_INGEST_RATE = ""  # fuzz the validation, not the push-rate limit
    # As Django's test client does: the test's transaction holds the connection, so the
    # handler must not close it at the end of each request.
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    yield
    signals.request_started.connect(close_old_connections)
    signals.request_finished.connect(close_old_connections)


@schema.parametrize()
@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_request_makes_the_api_fail_or_answer_html(case, agent_token):
    response = case.call(headers={"Authorization": f"Token {agent_token}"})
    case.validate_response(response, checks=[not_a_server_error])
    if response.content:
        headers = {name.lower(): values for name, values in response.headers.items()}
        content_type = headers["content-type"][0]
        assert content_type.startswith("application/json"), (response.status_code, content_type)
