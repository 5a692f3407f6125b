"""The share of requests that failed."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from alerts.kinds import RuleKind, register
from alerts.promql import Metrics, NotExportable, duration, number
from alerts.sources import ServiceWindow
from analysis.alerting import Health, Observation

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs


@register
class ErrorRate(RuleKind):
    name = "error_rate"
    order = 50
    label = "Error rate above (ratio, 0.05 = 5%)"
    description = (
        "Requests that finished with an error over all finished requests (engine counters:"
        ' vLLM finished_reason="error", TGI failures other than err="validation", Triton'
        " failures, SGLang's 5xx answers; else pushed rows); client aborts and requests refused"
        " as invalid are not errors."
    )
    unit = "ratio"

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        finished = round(w.finished)
        if not finished:
            return Observation(Health.NO_DATA, count=0, reason="no finished requests")
        if finished < rule.min_requests:
            # Below the floor one error is a large rate: the floor keeps noise from firing.
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=finished,
                reason=f"{finished} finished requests, fewer than {rule.min_requests}",
            )
        return Observation(
            Health.OK,
            value=w.error_rate,
            count=finished,
            reason=f"{round(w.errored)} errors in {finished} finished requests",
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        w = duration(rule.window_s)
        errors = m.counter_increase("request_errors", w)
        parts = [m.counter_increase("requests_finished", w), errors]
        with contextlib.suppress(NotExportable):  # an engine that counts no aborts
            # TGI's abort series exist only after a client first goes away, and a sum with an
            # empty vector is empty: the rule would never fire until then.
            parts.append(f"({m.counter_increase('request_aborts', w)} or vector(0))")
        return f"({errors}) / ({' + '.join(parts)}) > {number(rule.threshold)}"
