"""The alert rule kinds: one class per kind, holding its unit, direction, description, the rules a
service starts with, and how it observes a window. This registry is the one list of kinds: the
model's choices, the form, evaluation, defaults and docs read it.

A new kind is a module in this folder (`alerts/kinds/`) with one class decorated with
`@register`; the package imports every module here (`core.discovery`). `docs/extending.md`
walks through one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from alerts.promql import Metrics, NotExportable
from alerts.sources import ServiceWindow
from analysis.alerting import Direction, Health, Observation
from core.discovery import import_submodules
from core.registry import Registry

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs
    from dossiers.models import Service


def _span_long(seconds: int) -> str:
    """3600 -> "1 h", 300 -> "5 min", 259200 -> "3 days"."""
    if seconds % 86400 == 0:
        return f"{seconds // 86400} days" if seconds > 86400 else "1 day"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return _span(seconds)


def _span(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


def default_rule(
    name: str,
    threshold: float,
    resolve_threshold: float,
    *,
    window_s: int,
    for_s: int,
    severity: str = "warning",
    **more: object,
) -> dict:
    """One rule a service starts with, as `RuleKind.default_specs` lists them (Rule's fields;
    `more`: any other, e.g. min_requests)."""
    return {
        "name": name,
        "threshold": threshold,
        "resolve_threshold": resolve_threshold,
        "window_s": window_s,
        "for_s": for_s,
        **more,
        "severity": severity,
    }


class RuleKind:
    """What a kind of rule watches. Subclasses set the class attributes and `observe_window`."""

    name: ClassVar[str]  # stored in Rule.kind
    label: ClassVar[str]  # the form's choice, with the threshold's unit
    description: ClassVar[str]  # one sentence for docs and the rule list
    unit: ClassVar[str]  # "ms", "ratio" (stored 0-1, shown as %), "%", "s" or "x"
    direction: ClassVar[Direction] = Direction.ABOVE
    # What evaluation must read for it (batched across rules by `alerts.evaluation_inputs`).
    latency_metric: ClassVar[str | None] = None  # P99 of this family
    reads_gpu: ClassVar[bool] = False
    reads_baseline_cost: ClassVar[bool] = False
    per_host: ClassVar[bool] = False  # observes last-seen times per host, not a service window
    reads_slo: ClassVar[bool] = False  # observes SLO counts over `windows(rule)` (alerts.slo)
    inclusive: ClassVar[bool] = False  # a value at the threshold fires (see Thresholds)
    order: ClassVar[int] = 100  # place among the form's choices and defaults (built-ins: 10-90)

    def default_specs(self, service: Service) -> list[dict]:
        """The rules of this kind a service starts with (none by default)."""
        return []

    def observe(self, rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
        """(identity labels, observation) pairs: by default one, for the whole service."""
        window = inputs.windows.get(rule.window_s, {}).get(rule.service_id)
        if window is None:
            obs = Observation(
                Health.NO_DATA, reason=f"no roll-up rows in the last {_span(rule.window_s)}"
            )
        else:
            obs = self.observe_window(rule, window, inputs)
        return [({"service": rule.service.slug}, obs)]

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        raise NotImplementedError

    def promql(self, rule: Rule, m: Metrics) -> str:
        """PromQL over the engine's and DCGM's names, non-empty exactly when the rule holds
        (the Prometheus rules export, `alerts.prometheus_rules`). NotExportable if none."""
        raise NotExportable("Prometheus has no series for it")


KINDS: Registry[RuleKind] = Registry("rule kind")
register = KINDS.register  # class decorator: `@register class MyKind(RuleKind)`
unregister = KINDS.unregister


def ordered() -> list[RuleKind]:
    """Every kind in its `order` (ties: in registration order, i.e. module name order)."""
    return sorted(KINDS.values(), key=lambda k: k.order)


def kind_choices() -> list[tuple[str, str]]:
    """The model field's choices, in the kinds' order (a function: migrations name it)."""
    return [(k.name, k.label) for k in ordered()]


def get(name: str) -> RuleKind | None:
    return KINDS.get(name)


@dataclass(frozen=True)
class _Unknown:
    """What evaluation does with a stored kind no module registers any more."""

    name: str

    def observe(self, rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
        reason = f"unknown rule kind {self.name!r} (no module registers it)"
        return [({"service": rule.service.slug}, Observation(Health.ERROR, reason=reason))]


def for_rule(name: str) -> RuleKind | _Unknown:
    return KINDS.get(name) or _Unknown(name)


# Every kind is a module in this folder with a `@register` class (docs/extending.md): every
# module here is imported, in name order (`_economics` is a shared base, not a kind).
import_submodules(__name__)
