"""Prometheus's HTTP API answers -> the exposition text a scrape would have returned.

A Prometheus source asks `/api/v1/query_range` for the raw series the mapping tables read
(`metric_names`), then rebuilds, per evaluation step, the text an engine's `/metrics` served at
that moment. That text goes through the same parser, windows and roll-ups as a scrape, so
deltas, restarts and bucket merging are decided in one place. Imports no Django.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable

from collectors.exposition.scrape import metric_names

_MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*')


def parse_selector(selector: str) -> list[tuple[str, str, str]]:
    """`job="vllm", namespace=~"prod|canary"` -> [(name, op, value)]. ValueError names the part."""
    matchers = []
    text = selector.strip().removeprefix("{").removesuffix("}").strip()
    pos = 0
    while pos < len(text):
        m = _MATCHER.match(text, pos)
        if m is None:
            raise ValueError(
                f'cannot read a label matcher at {text[pos:][:40]!r} (use name="value")'
            )
        if m.group(1) == "__name__":
            raise ValueError("__name__ is chosen by PerfHub from the mapping tables")
        matchers.append((m.group(1), m.group(2), m.group(3)))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ",":
                raise ValueError(f"expected a comma at {text[pos:][:40]!r}")
            pos += 1
    return matchers


def series_query(source: str, selector: str) -> str:
    """The PromQL selector for every series the mapping tables read for `source`."""
    names = "|".join(re.escape(name) for name in metric_names(source))
    matchers = [f'__name__=~"{names}"']
    matchers += [f'{n}{op}"{v}"' for n, op, v in parse_selector(selector)]
    return "{" + ", ".join(matchers) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def sample_line(metric: dict[str, str], value: str) -> str:
    name = metric.get("__name__", "")
    labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(metric.items()) if k != "__name__")
    return f"{name}{{{labels}}} {value}" if labels else f"{name} {value}"


def expositions(
    matrix: Iterable[dict], *, carry: frozenset[str] = frozenset(), carry_s: float = 0.0
) -> dict[float, str]:
    """A `query_range` matrix result -> {unix time: exposition text of the series present then}.

    A series with no value at a step (stale, or not yet created) is absent from that step's
    text, as it would be from a scrape, except a cumulative one (its name in `carry`) that had
    a value less than `carry_s` before: it keeps that value. A target missing a few scrapes
    then comes back with its counters grown, and must not be counted as new from zero (a
    restart still shows as a counter going down). Steps are in time order.
    """
    steps: set[float] = set()
    readings: list[tuple[dict[str, str], list[tuple[float, str]]]] = []
    for series in matrix:
        metric = series.get("metric") or {}
        if not metric.get("__name__"):
            continue  # only plain series selectors are asked for; a computed result is not one
        values = [(float(ts), str(v)) for ts, v in series.get("values") or []]
        values = [(ts, v) for ts, v in values if math.isfinite(ts)]
        steps.update(ts for ts, _ in values)
        readings.append((metric, values))
    order = sorted(steps)
    lines: dict[float, list[str]] = defaultdict(list)
    for metric, values in readings:
        carried = metric["__name__"] in carry
        at = dict(values)
        last: tuple[float, str] | None = None
        for ts in order:
            if ts in at:
                last = (ts, at[ts])
            elif not (carried and last is not None and ts - last[0] < carry_s):
                continue
            lines[ts].append(sample_line(metric, last[1]))
    return {ts: "\n".join(lines[ts]) + "\n" for ts in order}
