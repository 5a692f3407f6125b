"""`__any` selects the same rows as `__in`, one array parameter on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dossiers.models import Team

pytestmark = pytest.mark.django_db


@pytest.fixture
def teams():
    return [Team.objects.create(slug=f"t{i}", name=f"T{i}") for i in range(5)]


def test_any_selects_the_rows_in_the_list(teams):
    wanted = {teams[1].pk, teams[3].pk}
    assert set(Team.objects.filter(pk__any=wanted).values_list("pk", flat=True)) == wanted


def test_any_of_strings_selects_by_value(teams):
    assert list(Team.objects.filter(slug__any=["t2", "nope"]).values_list("slug", flat=True)) == [
        "t2"
    ]


def test_any_of_nothing_selects_nothing(teams):
    assert not Team.objects.filter(pk__any=[]).exists()


@pytest.mark.postgres
def test_any_sends_one_parameter_on_postgresql(teams):
    with CaptureQueriesContext(connection) as queries:
        list(Team.objects.filter(pk__any=[t.pk for t in teams]))
    assert "= ANY(" in queries[-1]["sql"]


def test_any_on_a_foreign_key_selects_by_the_related_ids(teams, make_service):
    from dossiers.models import Service

    make_service("a", team=teams[0])
    make_service("b", team=teams[2])
    found = Service.objects.filter(team_id__any=[teams[2].pk, teams[4].pk])
    assert list(found.values_list("slug", flat=True)) == ["b"]
