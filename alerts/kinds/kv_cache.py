"""The engine's KV cache near full: preemptions and queueing follow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import RuleKind, default_rule, register
from alerts.promql import Metrics, duration, number
from alerts.sources import ServiceWindow
from analysis import diagnosis
from analysis.alerting import Health, Observation

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs
    from dossiers.models import Service


@register
class KvCache(RuleKind):
    name = "kv_cache"
    order = 40
    label = "KV cache usage above (ratio, 0.9 = 90%)"
    description = "The engine's KV cache near full: requests will queue or be preempted."
    unit = "ratio"

    def default_specs(self, service: Service) -> list[dict]:
        full = diagnosis.KV_CACHE_NEAR_FULL
        return [
            default_rule("KV cache near full", full, round(full - 0.05, 3), window_s=300, for_s=300)
        ]

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        if w.kv_cache_mean is None:
            return Observation(Health.NO_DATA, reason="no KV cache usage scraped")
        return Observation(
            Health.OK, value=w.kv_cache_mean, count=w.gauge_samples, reason="mean KV cache usage"
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        mean = m.gauge_max_of_means("kv_cache_usage", duration(rule.window_s))
        return f"{mean} > {number(rule.threshold)}"
