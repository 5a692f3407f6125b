"""Live margin at the service's price below a bound."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import default_rule, register
from alerts.kinds._economics import _Economics
from alerts.promql import NotExportable
from analysis.alerting import Direction, Health, Observation
from core.templatetags.display import money

if TYPE_CHECKING:
    from alerts.models import Rule
    from dossiers.models import Service


@register
class Margin(_Economics):
    name = "margin"
    order = 70
    label = "Margin below (ratio, 0.2 = 20%)"
    description = "Live margin against the price charged per Mtok below a target."
    unit = "ratio"
    direction = Direction.BELOW

    def default_specs(self, service: Service) -> list[dict]:
        if not service.price_per_mtok:
            return []
        return [default_rule("Margin below target", 0.2, 0.25, window_s=3600, for_s=3600)]

    def promql_value(self, rule: Rule, cost: str) -> str:
        if not rule.service.price_per_mtok:
            raise NotExportable("the service has no price per Mtok")
        return f"(1 - {cost} / {float(rule.service.price_per_mtok):.10g})"

    def judge(self, rule, econ, tps, requests, inputs) -> Observation:
        if econ.margin is None:
            return Observation(Health.NO_DATA, reason="the service has no price per Mtok")
        return Observation(
            Health.OK,
            value=econ.margin,
            count=requests,
            reason=(
                f"live cost {money(econ.cost_per_mtok)} {rule.service.currency}/Mtok "
                f"(allocation basis) at {tps:,.0f} tokens/s"
            ),
        )
