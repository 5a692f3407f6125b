"""The alert rule kinds: one class per kind, holding its unit, direction, description, the rules a
service starts with, and how it observes a window. This registry is the one list of kinds: the
model's choices, the form, evaluation, defaults and docs read it.

A new kind is a module in this folder (`alerts/kinds/`) with one class decorated with
`@register`; the package imports every module here (`core.discovery`). `docs/extending.md`
walks through one.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from alerts.promql import Metrics, NotExportable, duration, number
from alerts.sources import ServiceWindow, baseline_costs
from analysis import diagnosis
from analysis.alerting import Direction, Health, Observation
from analysis.percentiles import minimum_count
from analysis.slo import pair_value, short_window_covered
from core.discovery import import_submodules
from core.registry import Registry
from core.templatetags.display import money, percent

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs
    from dossiers.models import Service

# The GPU thresholds are the diagnosis rules' (analysis.diagnosis), so a live diagnosis and an
# alert never disagree about the same window.


def _span_long(seconds: int) -> str:
    """3600 -> "1 h", 300 -> "5 min", 259200 -> "3 days"."""
    if seconds % 86400 == 0:
        return f"{seconds // 86400} days" if seconds > 86400 else "1 day"
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    return _span(seconds)


def _span(seconds: int) -> str:
    return f"{seconds // 60} min" if seconds % 60 == 0 else f"{seconds} s"


class RuleKind:
    """What a kind of rule watches. Subclasses set the class attributes and `observe_window`."""

    name: ClassVar[str]  # stored in Rule.kind
    label: ClassVar[str]  # the form's choice, with the threshold's unit
    description: ClassVar[str]  # one sentence for docs and the rule list
    unit: ClassVar[str]  # "ms", "ratio" (0-1), "%" or "s"
    direction: ClassVar[Direction] = Direction.ABOVE
    # What evaluation must read for it (batched across rules by `alerts.services`).
    latency_metric: ClassVar[str | None] = None  # P99 of this family
    reads_gpu: ClassVar[bool] = False
    reads_baseline_cost: ClassVar[bool] = False
    per_host: ClassVar[bool] = False  # observes last-seen times per host, not a service window
    reads_slo: ClassVar[bool] = False  # observes SLO counts over `windows(rule)` (alerts.slo)
    inclusive: ClassVar[bool] = False  # a value at the threshold fires (see Thresholds)

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


def kind_choices() -> list[tuple[str, str]]:
    """The model field's choices (a function: migrations name it)."""
    return KINDS.choices()


def get(name: str) -> RuleKind | None:
    return KINDS.get(name)


# --- Latency ----------------------------------------------------------------------------------


class _P99(RuleKind):
    """A P99 latency above a bound; a subclass names its family once:
    `class P99Queue(_P99, metric="queue", metric_label="queue time", description=...)`."""

    unit = "ms"
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
            {
                "name": f"P99 {self.metric_label} above SLO",
                "threshold": slo,
                "resolve_threshold": round(slo * 0.9, 3),
                "window_s": 300,
                "for_s": 300,
                "keep_firing_for_s": 120,
                "min_requests": minimum_count(0.99),
                "severity": "critical",
            }
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
        return Observation(
            Health.OK, value=p.value, count=p.count, reason=f"P99 over {span} ({where})"
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        # Buckets summed by `le` across series (merged), then the quantile: never averaged.
        s = m.engine_series(_SCRAPED_HISTOGRAM[self.latency_metric])
        w = duration(rule.window_s)
        p99 = f"histogram_quantile(0.99, sum by (le) (rate({s.name}_bucket{s.selector}[{w}])))"
        need = max(rule.min_requests, minimum_count(0.99))
        enough = f"sum(increase({s.name}_count{s.selector}[{w}])) >= {need}"
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


# --- GPU --------------------------------------------------------------------------------------


@register
class GpuWaiting(RuleKind):
    name = "gpu_waiting"
    label = "GPU waiting: utilization below (0-1) while requests queue"
    description = (
        "GPU-Util low while requests wait in the engine's queue: the GPU waits on the CPU side,"
        " IO or too small batches."
    )
    unit = "ratio"
    direction = Direction.BELOW
    reads_gpu = True

    def default_specs(self, service: Service) -> list[dict]:
        return [
            {
                "name": "GPU waiting while requests queue",
                "threshold": diagnosis.LOW_GPU_UTIL,
                "resolve_threshold": round(diagnosis.LOW_GPU_UTIL + 0.1, 3),
                "window_s": 300,
                "for_s": 600,
                "severity": "warning",
            }
        ]

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        if w.gpu_util is None:
            return Observation(Health.NO_DATA, reason="no GPU utilization from these hosts")
        if w.waiting_mean is None:
            return Observation(Health.NO_DATA, reason="no queue length (requests waiting) scraped")
        return Observation(
            Health.OK,
            value=w.gpu_util,
            count=w.gpu_samples,
            gate=w.waiting_mean >= diagnosis.MIN_REQUESTS_WAITING,
            reason=f"{w.waiting_mean:.1f} requests waiting on average",
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        w = duration(rule.window_s)
        s = m.engine_series("requests_waiting")
        waiting = f"sum(avg_over_time({s.name}{s.selector}[{w}]))"
        queued = f"{waiting} >= {number(diagnosis.MIN_REQUESTS_WAITING)}"
        return f"({m.gpu_mean('util', w)} < {number(rule.threshold)}) and on() ({queued})"


@register
class SmGap(RuleKind):
    name = "sm_gap"
    label = "SM active / GPU-Util below (ratio) while the GPU looks busy"
    description = (
        "SM active far below GPU-Util: kernels run but leave the SMs idle (memory- or"
        " launch-bound); GPU-Util alone would call the GPU busy."
    )
    unit = "ratio"
    direction = Direction.BELOW
    reads_gpu = True

    def default_specs(self, service: Service) -> list[dict]:
        return [
            {
                "name": "SM active far below GPU-Util",
                "threshold": diagnosis.SM_TO_GPU_UTIL_RATIO,
                "resolve_threshold": round(diagnosis.SM_TO_GPU_UTIL_RATIO + 0.1, 3),
                "window_s": 900,
                "for_s": 1800,
                "severity": "info",
            }
        ]

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        if w.gpu_util is None:
            return Observation(Health.NO_DATA, reason="no GPU utilization from these hosts")
        if w.sm_active is None:
            return Observation(
                Health.NO_DATA, reason="no SM active (DCGM profiling or NVML GPM) from these hosts"
            )
        ratio = w.sm_active / w.gpu_util if w.gpu_util else 1.0
        return Observation(
            Health.OK,
            value=ratio,
            count=w.gpu_samples,
            gate=w.gpu_util >= diagnosis.HIGH_GPU_UTIL,
            reason=f"SM active {percent(w.sm_active)} vs GPU-Util {percent(w.gpu_util)}",
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        w = duration(rule.window_s)
        util, sm = m.gpu_mean("util", w), m.gpu_mean("sm_active", w)
        busy = f"{util} >= {number(diagnosis.HIGH_GPU_UTIL)}"
        return f"({sm} / ({util}) < {number(rule.threshold)}) and on() ({busy})"


@register
class KvCache(RuleKind):
    name = "kv_cache"
    label = "KV cache usage above (0-1)"
    description = "The engine's KV cache near full: requests will queue or be preempted."
    unit = "ratio"

    def default_specs(self, service: Service) -> list[dict]:
        return [
            {
                "name": "KV cache near full",
                "threshold": diagnosis.KV_CACHE_NEAR_FULL,
                "resolve_threshold": round(diagnosis.KV_CACHE_NEAR_FULL - 0.05, 3),
                "window_s": 300,
                "for_s": 300,
                "severity": "warning",
            }
        ]

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        if w.kv_cache_mean is None:
            return Observation(Health.NO_DATA, reason="no KV cache usage scraped")
        return Observation(
            Health.OK, value=w.kv_cache_mean, count=w.gauge_samples, reason="mean KV cache usage"
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        s = m.engine_series("kv_cache_usage")
        mean = f"max(avg_over_time({s.name}{s.selector}[{duration(rule.window_s)}]))"
        return f"{mean} > {number(rule.threshold)}"


@register
class ErrorRate(RuleKind):
    name = "error_rate"
    label = "Error rate above (0-1)"
    description = (
        "Requests that finished with an error over all finished requests (engine counters:"
        ' vLLM finished_reason="error", TGI failures, Triton failures; else pushed rows);'
        " client aborts are not errors."
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
            parts.append(m.counter_increase("request_aborts", w))
        return f"({errors}) / ({' + '.join(parts)}) > {number(rule.threshold)}"


# --- Economics --------------------------------------------------------------------------------


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


@register
class CostVsBaseline(_Economics):
    name = "cost_vs_baseline"
    label = "Cost per Mtok above baseline by (%)"
    description = "Live cost per million tokens above the current baseline's, in percent."
    unit = "%"
    reads_baseline_cost = True

    def default_specs(self, service: Service) -> list[dict]:
        return [
            {
                "name": "Cost per Mtok above baseline",
                "threshold": 25.0,
                "resolve_threshold": 15.0,
                "window_s": 3600,
                "for_s": 3600,
                "severity": "warning",
            }
        ]

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


@register
class Margin(_Economics):
    name = "margin"
    label = "Margin below (0-1)"
    description = "Live margin against the price charged per Mtok below a target."
    unit = "ratio"
    direction = Direction.BELOW

    def default_specs(self, service: Service) -> list[dict]:
        if not service.price_per_mtok:
            return []
        return [
            {
                "name": "Margin below target",
                "threshold": 0.2,
                "resolve_threshold": 0.25,
                "window_s": 3600,
                "for_s": 3600,
                "severity": "warning",
            }
        ]

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


# --- SLO error budget -------------------------------------------------------------------------


@register
class SloBurn(RuleKind):
    """Multi-window, multi-burn-rate (SRE workbook, chapter 5): fires for an SLO when both the
    rule's window and a twelfth of it (1 h and 5 min, 6 h and 30 min, 3 days and 6 h) spend
    the error budget faster than the threshold. The long window makes the burn significant,
    the short one makes the alert stop soon after the burn does. One alert per SLO."""

    name = "slo_burn"
    label = "SLO error budget burn rate above (x), over the window and a twelfth of it"
    description = (
        "How fast each SLO spends its error budget (1x: exactly over the SLO's window), over"
        " the rule's window and a twelfth of it; both must exceed the threshold."
    )
    unit = "x"
    reads_slo = True
    inclusive = True  # a steady burn at the factor is the pace the pair exists to catch

    @staticmethod
    def windows(rule: Rule) -> tuple[int, int]:
        return rule.window_s, max(60, rule.window_s // 12)

    def default_specs(self, service: Service) -> list[dict]:
        from alerts.slo import burn_pairs

        if not service.slo_objects():
            return []
        return [
            {
                "name": f"SLO budget burn: {p.name} ({p.factor:g}x over {_span_long(p.long_s)})",
                "threshold": p.factor,
                "resolve_threshold": p.factor,
                "window_s": p.long_s,
                "for_s": 0,
                # A burn hovering at the factor would open and close an alert every few
                # minutes; held for the short window, it is one episode.
                "keep_firing_for_s": p.short_s,
                "min_requests": 100,
                "severity": p.severity,
            }
            for p in burn_pairs()
        ]

    def observe(self, rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
        from alerts.slo import reading

        long_s, short_s = self.windows(rule)
        out = []
        for o in inputs.slos.get(rule.service_id, []):
            identity = {"service": rule.service.slug, "slo": o.key}
            end = inputs.window_end
            long_w = inputs.slo_windows.get(long_s, {}).get(rule.service_id)
            short_w = inputs.slo_windows.get(short_s, {}).get(rule.service_id)
            long = reading(o, long_w, long_s, end)
            short = reading(o, short_w, short_s, end)
            out.append((identity, self._judge(rule, o, long, short)))
        return out

    def _judge(self, rule: Rule, o, long, short) -> Observation:
        spans = f"{_span_long(long.window_s)} and {_span_long(short.window_s)}"
        total = round(long.count.total)
        if not long.count.total or not short.count.total:
            why = "; ".join(long.notes + short.notes) or "no requests"
            return Observation(Health.NO_DATA, count=total, reason=f"{o.name}: {why} ({spans})")
        first = long.first_data_s
        if not short_window_covered(first, short.window_s):
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=total,
                reason=f"{o.name}: data for {_span(int(first or 0))} only, less than the short "
                f"window ({_span_long(short.window_s)})",
            )
        if total < rule.min_requests:
            return Observation(
                Health.INSUFFICIENT_DATA,
                count=total,
                reason=f"{o.name}: {total} requests in {_span_long(long.window_s)}, "
                f"fewer than {rule.min_requests}",
            )
        # The certain burn (the lower bound) fires the alert: a threshold between bucket edges
        # must not page on requests that may well be good. The upper bound is said beside.
        lb, sb = long.burn, short.burn
        value = pair_value(lb[0], sb[0])
        bounds = "" if long.exact and short.exact else f" (up to {pair_value(lb[1], sb[1]):.1f}x)"
        return Observation(
            Health.OK,
            value=value,
            count=total,
            reason=(
                f"{o.name} ({o.description}): burn {lb[0]:.1f}x over "
                f"{_span_long(long.window_s)}, {sb[0]:.1f}x over {_span_long(short.window_s)}"
                f"{bounds}; {long.source}"
            ),
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        from alerts.slo_promql import burn_expression

        return burn_expression(rule, m, self.windows(rule))


# --- Silence ----------------------------------------------------------------------------------


@register
class NoData(RuleKind):
    name = "no_data"
    label = "No data from a host or the service for (seconds)"
    description = "Seconds since a host (or any host of the service) last sent data."
    unit = "s"
    per_host = True

    def default_specs(self, service: Service) -> list[dict]:
        return [
            {
                "name": "No data",
                "threshold": 600.0,
                "resolve_threshold": 120.0,
                "window_s": 300,
                "for_s": 0,
                "min_requests": 0,
                "severity": "warning",
            }
        ]

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
        return f"absent_over_time({s.name}{s.selector}[{duration(int(rule.threshold))}])"


@dataclass(frozen=True)
class _Unknown:
    """What evaluation does with a stored kind no module registers any more."""

    name: str

    def observe(self, rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
        reason = f"unknown rule kind {self.name!r} (no module registers it)"
        return [({"service": rule.service.slug}, Observation(Health.ERROR, reason=reason))]


def for_rule(name: str) -> RuleKind | _Unknown:
    return KINDS.get(name) or _Unknown(name)


# A new kind is a module in this folder with a `@register` class (docs/extending.md): every
# module here is imported, in name order, after the built-ins above.
import_submodules(__name__)
