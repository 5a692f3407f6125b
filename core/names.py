"""The names registries hand out (engines, load-test formats, rule kinds, receiver kinds) are
stored in columns: one length and one spelling for all of them, checked when a name is
registered rather than when its first row is written (PostgreSQL would answer that with
"value too long" and the request with a 500). No Django here: registries import it at start-up.
"""

from __future__ import annotations

import re

# Every column that stores a registry name is this long (tests/core/test_names.py checks them).
NAME_MAX_LENGTH = 20
# Lower case, digits, "-" or "_", starting with a letter (as the agent checks engine names,
# collectors/agent/config.py, which cannot import this): safe in URLs, CLI flags, metric
# labels and file names.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]*")


def check_name(name: object, *, what: str, max_length: int = NAME_MAX_LENGTH) -> str:
    """`name` if a column of `max_length` can store it and it is spelled as names are; else a
    ValueError saying which `what` (e.g. "engine") and why."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(
            f"{what} name {name!r}: lower-case letters, digits, '-' or '_', starting with a letter"
        )
    if len(name) > max_length:
        raise ValueError(
            f"{what} name {name!r} is {len(name)} characters; the column that stores it "
            f"holds {max_length}"
        )
    return name
