"""P99 latency above a bound: one kind per latency family (end-to-end, TTFT, TPOT)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from alerts.kinds import RuleKind, _span, default_rule, register
from alerts.promql import Metrics, duration, number
from alerts.sources import ServiceWindow
from analysis.alerting import Health, Observation
from analysis.percentiles import minimum_count

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs
    from dossiers.models import Service


class _P99(RuleKind):
    """A P99 latency above a bound; a subclass names its family once:
    `class P99Queue(_P99, metric="queue", metric_label="queue time", description=...)`."""

    unit = "ms"
    order = 10
    metric_label: ClassVar[str]

    def __init_subclass__(
        cls, *, metric: str, metric_label: str, description: str, label: str = "", **kwargs
    ) -> None:
        super().__init_subclass__(**kwargs)
        cls.name = f"p99_{metric}"
        cls.latency_metric = metric
        cls.metric_label = metric_label
        cls.label = f"P99 {label or metric_label} above (ms)"
        cls.description = description

    def default_specs(self, service: Service) -> list[dict]:
        slo = service.slo_for(self.latency_metric)
        if not slo:
            return []
        return [
            default_rule(
                f"P99 {self.metric_label} above SLO",
                slo,
                round(slo * 0.9, 3),
                window_s=300,
                for_s=300,
                keep_firing_for_s=120,
                min_requests=minimum_count(0.99),
                severity="critical",
            )
        ]

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        span = _span(rule.window_s)
        p = w.latency.get(self.latency_metric)
        if p is None or p.count == 0:
            return Observation(Health.NO_DATA, count=0, reason=f"no requests in the last {span}")
        # The rule's own floor, never below the one minimum count for the quantile.
        need = max(rule.min_requests, minimum_count(p.q))
        if p.count < need:
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=p.count,
                reason=f"P99 rests on {p.count} requests, fewer than {need}",
            )
        # Where it was measured, in every reason: an SLO is what users feel (client-side);
        # an engine's histogram starts later, so a server-side P99 can only understate it.
        where = "server-side, engine histograms" if p.vantage == "server" else "client-side"
        if p.value is None and p.below_first_edge is not None:
            # Bucket-bounded, in the first bucket: known only to be at most its edge, which
            # is the value judged (an upper bound: it can fire only if the edge is above).
            edge = p.below_first_edge
            return Observation(
                Health.OK,
                value=edge,
                count=p.count,
                reason=f"P99 < {edge:g} ms (first bucket; {where})",
            )
        if p.value is None:  # bucket-bounded, in +Inf: known only to exceed the last edge
            edge = p.above_last_edge or 0.0
            return Observation(
                Health.OK,
                value=edge,
                count=p.count,
                reason=f"P99 > {edge:g} ms (last bucket; {where})",
            )
        reason = f"P99 over {span} ({where})"
        if p.wide_bucket:
            # Interpolated inside a wide bucket (vLLM's 5-10 s): judged as Prometheus'
            # histogram_quantile judges it, and said to be an estimate, with its bucket and
            # whether the threshold lies inside it (then the breach is not certain).
            reason = f"P99 over {span} {p.text()} ({where})"
            if p.lower is not None and p.upper is not None and p.lower < rule.threshold < p.upper:
                reason += f"; the bound {rule.threshold:g} ms lies inside that bucket"
        return Observation(Health.OK, value=p.value, count=p.count, reason=reason)

    def promql(self, rule: Rule, m: Metrics) -> str:
        # Buckets summed by `le` across series (merged), then the quantile: never averaged.
        s = m.engine_series(_SCRAPED_HISTOGRAM[self.latency_metric])
        w = duration(rule.window_s)
        p99 = f"histogram_quantile(0.99, sum by (le) (rate({s.vector('_bucket')}[{w}])))"
        need = max(rule.min_requests, minimum_count(0.99))
        enough = f"sum(increase({s.vector('_count')}[{w}])) >= {need}"
        return f"({p99} * {number(1000 * s.scale)} > {number(rule.threshold)}) and on() ({enough})"


# The engine histogram each latency family is read from: per-request TPOT, never the ITL.
_SCRAPED_HISTOGRAM = {"e2e": "e2e_seconds", "ttft": "ttft_seconds", "tpot": "tpot_seconds"}


@register
class P99E2E(
    _P99,
    metric="e2e",
    metric_label="end-to-end",
    label="end-to-end latency",
    description="The service's P99 end-to-end latency, merged over its hosts, above a bound.",
):
    pass


@register
class P99TTFT(
    _P99,
    metric="ttft",
    metric_label="TTFT",
    description="P99 time to first token (prefill and queueing) above a bound.",
):
    pass


@register
class P99TPOT(
    _P99,
    metric="tpot",
    metric_label="TPOT",
    description="P99 time per output token (decode, memory bandwidth) above a bound.",
):
    pass
