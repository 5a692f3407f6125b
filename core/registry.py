"""One shape for the class registries (rule kinds, receiver kinds): a dict of name -> the one
instance of each registered class, in registration order, whose names fit their column; and
one for registries of instances (load-test formats, lint checks)."""

from __future__ import annotations

from typing import Protocol, TypeVar

from core.names import check_name


class Named(Protocol):
    name: str
    label: str


T = TypeVar("T", bound=Named)


class HasName(Protocol):
    name: str


E = TypeVar("E", bound=HasName)


class Registry(dict[str, T]):
    """`register` is the class decorator extension modules use; `what` names the registry in
    errors ("rule kind 'x' is already registered")."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def register(self, cls: type[T]) -> type[T]:
        """Class decorator: add one instance of `cls`; its `name` must be new and fit."""
        entry = cls()
        check_name(entry.name, what=self.what)
        if entry.name in self:
            raise ValueError(f"{self.what} {entry.name!r} is already registered")
        self[entry.name] = entry
        return cls

    def unregister(self, name: str) -> None:
        self.pop(name, None)

    def choices(self) -> list[tuple[str, str]]:
        """(name, label) pairs, for a model field's or a form's choices."""
        return [(entry.name, entry.label) for entry in self.values()]


class InstanceRegistry(dict[str, E]):
    """name -> entry, for modules that register an instance (`register(Check(...))`); one of
    a name already registered replaces it. `what` names the registry in errors."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def register(self, entry: E) -> E:
        check_name(entry.name, what=self.what)
        self[entry.name] = entry
        return entry

    def unregister(self, name: str) -> None:
        self.pop(name, None)
