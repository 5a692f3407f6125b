"""Label matchers as Alertmanager writes them (`=`, `!=`, `=~`), over plain dicts.

A regex matcher is anchored (`=~"chat-.*"` matches the whole value), as in Alertmanager.
A label that is absent matches as the empty string.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

OPERATORS = ("=", "!=", "=~")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        return re.fullmatch(self.value, actual) is not None


def parse_matchers(raw: Iterable[Mapping]) -> list[Matcher]:
    """Matchers from `[{"name", "op", "value"}]`; ValueError names the bad item."""
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise ValueError(f"matchers[{i}]: an object with name, op and value")
        name, op, value = item.get("name"), item.get("op", "="), item.get("value")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"matchers[{i}].name: letters, digits and underscores")
        if op not in OPERATORS:
            raise ValueError(f"matchers[{i}].op: one of {', '.join(OPERATORS)}")
        if not isinstance(value, str):
            raise ValueError(f"matchers[{i}].value: a string")
        if op == "=~":
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"matchers[{i}].value: not a regular expression ({exc})") from None
        out.append(Matcher(name, op, value))
    return out


def parse_matcher_text(text: str) -> list[dict]:
    """`service="chat-7b", alertname=~"P99.*"` -> the JSON form; ValueError on a bad item."""
    items = []
    pattern = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*(,|$)')
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = pattern.match(text, pos)
        if not m:
            raise ValueError(
                f'matcher {len(items) + 1}: expected name="value", name!="value" '
                f'or name=~"regex" near "{text[pos : pos + 20]}"'
            )
        items.append({"name": m[1], "op": m[2], "value": m[3].replace('\\"', '"')})
        pos = m.end()
    if not items:
        raise ValueError("at least one matcher")
    parse_matchers(items)
    return items


def all_match(matchers: Iterable[Matcher], labels: Mapping[str, str]) -> bool:
    return all(m.matches(labels) for m in matchers)
