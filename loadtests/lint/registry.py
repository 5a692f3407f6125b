"""The lint checks, listed by their `order`. A check module registers itself when imported
(loadtests.lint.checks imports every module in its folder), like the formats:

    register(Check("my_check", "what it looks for", run=my_function, order=200))
"""

from __future__ import annotations

from core.names import check_name

from .base import Check

_CHECKS: dict[str, Check] = {}


def register(check: Check) -> Check:
    check_name(check.name, what="lint check")
    _CHECKS[check.name] = check
    return check


def unregister(name: str) -> None:
    _CHECKS.pop(name, None)


def checks() -> tuple[Check, ...]:
    """Every check, by `order` (registration order among equals)."""
    return tuple(sorted(_CHECKS.values(), key=lambda check: check.order))


def check_names() -> tuple[str, ...]:
    return tuple(check.name for check in checks())
