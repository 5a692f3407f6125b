"""core.prepared.get_with_parent: the row and its parent the ORM's select_related would give."""

from __future__ import annotations

import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from collectors.models import AgentToken, Host, IngestBatch
from collectors.services.tokens import token_issue_for_host_name
from core.prepared import get_with_parent

pytestmark = pytest.mark.django_db


def _fields(instance) -> dict:
    return {f.attname: getattr(instance, f.attname) for f in type(instance)._meta.concrete_fields}


def test_the_row_and_its_parent_match_the_orms_in_one_query():
    token, _ = token_issue_for_host_name(host_name="gpu-node-01", label="rotation")
    expected = AgentToken.objects.select_related("host").get(pk=token.pk)
    with CaptureQueriesContext(connection) as queries:
        found = get_with_parent(AgentToken, "host", "prefix", token.prefix, null=("revoked_at",))
        assert _fields(found.host) == _fields(expected.host)
    assert _fields(found) == _fields(expected)
    assert len(queries) == 1


def test_a_row_whose_null_field_is_set_is_not_found():
    token, _ = token_issue_for_host_name(host_name="gpu-node-01")
    AgentToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    assert get_with_parent(AgentToken, "host", "prefix", token.prefix, null=("revoked_at",)) is None


def test_no_row_is_none():
    assert get_with_parent(AgentToken, "host", "prefix", "nosuch", null=("revoked_at",)) is None


def test_columns_that_need_converting_come_back_as_the_orm_makes_them():
    # IngestBatch.counts is JSON, converted on read where the database keeps it as jsonb.
    host = Host.objects.create(name="gpu-node-02")
    batch_id = uuid.uuid4()
    IngestBatch.objects.create(
        batch_id=batch_id, host=host, sent_at=timezone.now(), counts={"requests": 3}
    )
    found = get_with_parent(IngestBatch, "host", "batch_id", batch_id)
    assert found.counts == {"requests": 3}
    assert found.host.name == "gpu-node-02"
