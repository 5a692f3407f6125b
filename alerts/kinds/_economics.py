"""What the economics kinds (cost_vs_baseline, margin) share: live cost per million tokens.
A private module (`_`): discovery skips it, it registers no kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import RuleKind
from alerts.promql import Metrics, duration, number
from alerts.sources import ServiceWindow
from analysis.alerting import Direction, Health, Observation

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs


class _Economics(RuleKind):
    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        service = rule.service
        requests = round(w.requests)
        if requests < rule.min_requests:
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=requests,
                reason=f"{requests} requests in the window, fewer than {rule.min_requests}",
            )
        tps = w.tokens_per_second(service.token_basis)
        econ = service.economics(tokens_per_second=tps, gpus=service.total_gpus)
        if econ is None:
            return Observation(Health.NO_DATA, count=requests, reason="no tokens counted")
        return self.judge(rule, econ, tps, requests, inputs)

    def judge(self, rule, econ, tps: float, requests: int, inputs: Inputs) -> Observation:
        raise NotImplementedError

    def promql(self, rule: Rule, m: Metrics) -> str:
        # The prices, GPU count and baseline go in as numbers as they are at export: the file
        # says so, and is exported again when they change.
        service = rule.service
        w = duration(rule.window_s)
        tokens = m.token_rate(service.token_basis, w)
        # The one cost formula (analysis.cost through Service.economics) at 1 token/s: cost
        # per Mtok falls as 1 / throughput, so at T tokens/s it is this over T.
        at_one = service.economics(tokens_per_second=1.0, gpus=service.total_gpus)
        cost = f"({at_one.cost_per_mtok:.10g} / ({tokens}))"
        op = ">" if self.direction is Direction.ABOVE else "<"
        expr = f"{self.promql_value(rule, cost)} {op} {number(rule.threshold)}"
        guards = [f"({tokens}) > 0"]  # no tokens: no data, as in PerfHub, not an infinite cost
        if rule.min_requests:
            finished = m.counter_increase("requests_finished", w)
            guards.append(f"{finished} >= {rule.min_requests}")
        return expr + "".join(f" and on() ({g})" for g in guards)

    def promql_value(self, rule: Rule, cost: str) -> str:
        """The rule's figure in PromQL, from the live cost per Mtok expression."""
        raise NotImplementedError
