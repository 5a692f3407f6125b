"""Fixtures for dashboard tests; the rows they seed come from `tests.factories`. `agent_client`
speaks as a host's agent, for tests that push scrapes through the ingest API."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from rest_framework.test import APIClient

from collectors.models import Host
from collectors.services.tokens import token_issue


@pytest.fixture
def now() -> datetime:
    return datetime.now(tz=UTC)


@pytest.fixture
def agent_client(db) -> APIClient:
    client = APIClient()
    token = token_issue(host=Host.objects.create(name="gpu-node-07"))[1]
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    return client
