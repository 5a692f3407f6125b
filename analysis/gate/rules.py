"""How each gated metric is judged: direction, relative threshold and absolute floor."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

Direction = Literal["lower", "higher"]


@dataclass(frozen=True)
class MetricRule:
    """How one metric is judged: which way is better, and how much worse is too much."""

    metric: str
    direction: Direction
    relative: float  # fraction of the baseline, 0.05 = 5%
    floor: float  # absolute, in `unit`
    label: str
    unit: str

    def __post_init__(self) -> None:
        if self.direction not in ("lower", "higher"):
            raise ValueError(
                f"{self.metric}: direction must be 'lower' or 'higher' (got {self.direction!r})"
            )
        for name in ("relative", "floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"{self.metric}: {name} must be a number >= 0 (got {value!r})")
            if math.isinf(value):
                raise ValueError(f"{self.metric}: {name} must be finite")

    @property
    def threshold_text(self) -> str:
        sign = "+" if self.direction == "lower" else "-"
        unit = f" {self.unit}" if self.unit else ""
        return f"{sign}{self.relative * 100:g}% and {sign}{self.floor:g}{unit}"


def _latency_rules() -> dict[str, MetricRule]:
    # TPOT is a per-token figure (a few ms), so its floor is smaller than TTFT's and e2e's.
    floors = {"e2e": 10.0, "ttft": 10.0, "tpot": 2.0}
    rules = {}
    for family, floor in floors.items():
        rules[f"{family}_shift"] = MetricRule(
            metric=f"{family}_shift",
            direction="lower",
            relative=0.05,
            floor=floor,
            label=f"{family.upper()} all requests",
            unit="ms",
        )
        for p in ("p50", "p90", "p99"):
            metric = f"{family}_{p}_ms"
            rules[metric] = MetricRule(
                metric=metric,
                direction="lower",
                relative=0.05,
                floor=floor,
                label=f"{family.upper()} {p.upper()}",
                unit="ms",
            )
    return rules


DEFAULT_RULES: dict[str, MetricRule] = {
    **_latency_rules(),
    "qps": MetricRule("qps", "higher", 0.05, 0.1, "QPS", "req/s"),
    "output_tps": MetricRule("output_tps", "higher", 0.05, 1.0, "output tokens/s", "tok/s"),
}

_OVERRIDABLE = ("direction", "relative", "floor", "label", "unit")


def rules_with_overrides(
    overrides: Mapping[str, Mapping[str, object]],
    *,
    base: Mapping[str, MetricRule] = DEFAULT_RULES,
) -> dict[str, MetricRule]:
    """`base` with per-metric overrides, e.g. ``{"ttft_p99_ms": {"relative": 0.1}}``.

    A metric not in `base` is added, and then needs at least direction, relative and floor.
    """
    rules = dict(base)
    for metric, changes in overrides.items():
        if not isinstance(changes, Mapping):
            raise ValueError(f"overrides[{metric!r}] must be a mapping of rule fields")
        unknown = sorted(set(changes) - set(_OVERRIDABLE))
        if unknown:
            raise ValueError(
                f"overrides[{metric!r}]: unknown field(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(_OVERRIDABLE)}"
            )
        if metric in rules:
            rules[metric] = replace(rules[metric], **changes)
            continue
        missing = [f for f in ("direction", "relative", "floor") if f not in changes]
        if missing:
            raise ValueError(f"overrides[{metric!r}]: a new metric needs {', '.join(missing)}")
        rules[metric] = MetricRule(
            metric=metric,
            direction=changes["direction"],  # type: ignore[arg-type]
            relative=changes["relative"],  # type: ignore[arg-type]
            floor=changes["floor"],  # type: ignore[arg-type]
            label=str(changes.get("label", metric)),
            unit=str(changes.get("unit", "")),
        )
    return rules
