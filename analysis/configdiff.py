"""Readable diffs of JSON configs, and which keys changed between two of them."""

from __future__ import annotations

import difflib
import json
from typing import Any


def flatten(config: Any, prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}. Lists are leaves: a changed list is one changed key."""
    if isinstance(config, dict) and config:
        out: dict[str, Any] = {}
        for key, value in config.items():
            out.update(flatten(value, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: config} if prefix else {}


def changed_keys(before: dict, after: dict) -> set[str]:
    a, b = flatten(before), flatten(after)
    return {key for key in a.keys() | b.keys() if a.get(key, _MISSING) != b.get(key, _MISSING)}


def unified_diff(before: Any, after: Any, *, from_name: str, to_name: str) -> list[str]:
    def lines(cfg: Any) -> list[str]:
        return json.dumps(cfg, indent=2, sort_keys=True).splitlines()

    return list(
        difflib.unified_diff(
            lines(before), lines(after), fromfile=from_name, tofile=to_name, lineterm=""
        )
    )


_MISSING = object()
