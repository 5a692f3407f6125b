"""Extension modules found by looking, not by a list someone must remember to edit.

A registry package (engines, load-test formats, rule kinds, receivers) calls
`import_submodules(__name__)` once its registry is defined; every module in the package's
folder is imported in name order and registers what it defines. Modules whose name starts with
"_" are skipped (private helpers, and a way to switch a module off). Where order matters (format
detection), the registry orders by the entries' own `priority`, not by import order.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from types import ModuleType


def import_submodules(package: str) -> list[ModuleType]:
    """Import every public module of `package` (not recursive), in name order."""
    path = sys.modules[package].__path__ if package in sys.modules else None
    if path is None:
        path = importlib.import_module(package).__path__
    names = sorted(
        info.name for info in pkgutil.iter_modules(path) if not info.name.startswith("_")
    )
    return [importlib.import_module(f"{package}.{name}") for name in names]
