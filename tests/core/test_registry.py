"""The class registries' shared shape (core.registry)."""

import pytest

from core.registry import Registry


def make():
    registry = Registry("widget kind")

    @registry.register
    class Round:
        name = "round"
        label = "Round widget"

    return registry, Round


def test_a_registered_class_is_there_once_as_an_instance_and_a_choice():
    registry, cls = make()
    assert (type(registry["round"]), registry.choices()) == (cls, [("round", "Round widget")])


def test_a_second_class_of_the_same_name_is_refused_naming_the_registry():
    registry, _ = make()
    with pytest.raises(ValueError, match="widget kind 'round' is already registered"):

        @registry.register
        class Other:
            name = "round"
            label = "Other"
