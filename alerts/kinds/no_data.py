"""No data from the service's hosts: silence is not health."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import RuleKind, default_rule, register
from alerts.promql import Metrics, duration
from analysis.alerting import Health, Observation

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs
    from dossiers.models import Service


@register
class NoData(RuleKind):
    name = "no_data"
    order = 90
    label = "No data from a host or the service for (seconds)"
    description = "Seconds since a host (or any host of the service) last sent data."
    unit = "s"
    per_host = True

    def default_specs(self, service: Service) -> list[dict]:
        return [default_rule("No data", 600.0, 120.0, window_s=300, for_s=0, min_requests=0)]

    def observe(self, rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
        """Seconds of silence per host (seen within the lookback) and for the whole service."""
        end = inputs.window_end
        assert end is not None
        slug = rule.service.slug
        seen = inputs.last_data.get(rule.service_id, [])
        out = []
        for h in seen:
            silent = max(0.0, (end - h.last_end).total_seconds())
            obs = Observation(Health.OK, value=silent, reason=f"last data from {h.host_name}")
            out.append(({"service": slug, "host": h.host_name}, obs))
        if seen:
            silent = min(max(0.0, (end - h.last_end).total_seconds()) for h in seen)
            out.append(({"service": slug}, Observation(Health.OK, value=silent, reason="any host")))
        return out

    def promql(self, rule: Rule, m: Metrics) -> str:
        s = m.engine_series("requests_running")
        return f"absent_over_time({s.vector()}[{duration(int(rule.threshold))}])"
