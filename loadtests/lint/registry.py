"""The lint checks, in the order their findings are listed. A check module registers itself when
imported (loadtests.lint.checks imports every module in its package), like the formats:

    register(Check("my_check", "what it looks for", run=my_function))
"""

from __future__ import annotations

from .base import Check

_CHECKS: dict[str, Check] = {}


def register(check: Check) -> Check:
    _CHECKS[check.name] = check
    return check


def unregister(name: str) -> None:
    _CHECKS.pop(name, None)


def checks() -> tuple[Check, ...]:
    return tuple(_CHECKS.values())


def check_names() -> tuple[str, ...]:
    return tuple(_CHECKS)
