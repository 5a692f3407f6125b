"""Writes: narrative revision numbering and config versions."""

import pytest
from django.core.exceptions import ValidationError

from dossiers import selectors, services
from tests.factories.catalog import bare_service


def test_narrative_revisions_are_numbered_from_one(service, owner):
    numbers = [
        services.narrative_revise(service=service, body=f"v{i}", author=owner).number
        for i in range(3)
    ]
    assert numbers == [1, 2, 3]


def test_the_newest_revision_is_the_current_narrative(service):
    services.narrative_revise(service=service, body="first")
    services.narrative_revise(service=service, body="second", summary="rewrite")
    current = selectors.current_narrative(service)
    assert (current.number, current.body, current.summary) == (2, "second", "rewrite")


def test_revision_numbers_are_per_service(service, team):
    other = bare_service(team, "other")
    services.narrative_revise(service=service, body="a")
    services.narrative_revise(service=service, body="b")
    assert services.narrative_revise(service=other, body="c").number == 1


def test_config_versions_are_numbered_and_the_newest_is_current(service):
    v1 = services.config_version_create(service=service, config={"max_num_seqs": 8})
    v2 = services.config_version_create(service=service, config={"max_num_seqs": 16})
    v1.refresh_from_db()
    assert (v1.version, v2.version) == (1, 2)
    assert (v1.is_current, v2.is_current) == (False, True)
    assert selectors.current_config(service) == v2


def test_a_config_version_can_be_stored_without_becoming_current(service):
    v1 = services.config_version_create(service=service, config={"a": 1})
    v2 = services.config_version_create(service=service, config={"a": 2}, make_current=False)
    assert selectors.current_config(service) == v1
    assert v2.version == 2


def test_make_current_moves_the_flag_back_to_an_older_version(service):
    v1 = services.config_version_create(service=service, config={"a": 1})
    services.config_version_create(service=service, config={"a": 2})
    services.config_version_make_current(config_version=v1)
    assert selectors.current_config(service) == v1


def test_a_config_that_is_not_a_json_object_is_rejected(service):
    with pytest.raises(ValidationError) as excinfo:
        services.config_version_create(service=service, config=["not", "an", "object"])
    assert "config" in excinfo.value.message_dict
    assert service.config_versions.count() == 0
