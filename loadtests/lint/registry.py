"""The lint checks, listed by their `order`. A check module registers itself when imported
(loadtests.lint.checks imports every module in its folder), like the formats:

    register(Check("my_check", "what it looks for", run=my_function, order=200))
"""

from __future__ import annotations

from core.registry import InstanceRegistry

from .base import Check

_CHECKS: InstanceRegistry[Check] = InstanceRegistry("lint check")
register = _CHECKS.register
unregister = _CHECKS.unregister


def checks() -> tuple[Check, ...]:
    """Every check, by `order` (registration order among equals)."""
    return tuple(sorted(_CHECKS.values(), key=lambda check: check.order))


def check_names() -> tuple[str, ...]:
    return tuple(check.name for check in checks())
