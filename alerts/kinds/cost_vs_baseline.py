"""Live cost per million tokens above the current baseline's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import default_rule, register
from alerts.kinds._economics import _Economics
from alerts.promql import NotExportable
from alerts.sources import baseline_costs
from analysis.alerting import Health, Observation
from core.templatetags.display import money

if TYPE_CHECKING:
    from alerts.models import Rule
    from dossiers.models import Service


@register
class CostVsBaseline(_Economics):
    name = "cost_vs_baseline"
    order = 60
    label = "Cost per Mtok above baseline by (%)"
    description = "Live cost per million tokens above the current baseline's, in percent."
    unit = "%"
    reads_baseline_cost = True

    def default_specs(self, service: Service) -> list[dict]:
        return [default_rule("Cost per Mtok above baseline", 25.0, 15.0, window_s=3600, for_s=3600)]

    def promql_value(self, rule: Rule, cost: str) -> str:
        base = baseline_costs([rule.service]).get(rule.service_id)
        if not base:
            raise NotExportable("no current baseline with a throughput")
        return f"({cost} / {base:.10g} - 1) * 100"

    def judge(self, rule, econ, tps, requests, inputs) -> Observation:
        base = inputs.baseline_costs.get(rule.service_id)
        if not base:
            return Observation(Health.NO_DATA, reason="no current baseline with a throughput")
        return Observation(
            Health.OK,
            value=(econ.cost_per_mtok / base - 1.0) * 100.0,
            count=requests,
            reason=(
                f"live cost {money(econ.cost_per_mtok)} {rule.service.currency}/Mtok "
                f"vs baseline {money(base)} (allocation basis)"
            ),
        )
