"""Fixtures for the collectors tests: a host, its token, an API client speaking as the agent.
Builders of batches are in tests/collectors/factories.py."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from collectors.models import Host
from collectors.services.tokens import token_issue


@pytest.fixture
def host(db) -> Host:
    return Host.objects.create(name="gpu-node-07")


@pytest.fixture
def agent_token(host) -> str:
    return token_issue(host=host)[1]


@pytest.fixture
def agent_client(agent_token) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {agent_token}")
    return client


@pytest.fixture
def vllm_texts(fixtures_dir) -> tuple[str, str]:
    return (
        (fixtures_dir / "vllm" / "metrics-t0.prom").read_text(),
        (fixtures_dir / "vllm" / "metrics-t15.prom").read_text(),
    )
