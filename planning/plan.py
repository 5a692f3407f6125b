"""The capacity plan of a service: from its measured sweep to replicas, GPUs and money at an SLO.

One function builds it (`plan_for`), and the page, the API and `manage.py plan_capacity` all
show its `to_dict()` or its fields, so they agree. The maths is `analysis.capacity`; this module
picks the sweep, turns runs into points, reads the forecast and does the arithmetic:

    per-replica load   = highest load meeting every objective (80% interval), from the sweep
    planned per replica = that rate x (1 - headroom)
    replicas           = ceil(forecast req/s / planned per replica)
    GPUs               = replicas x the service's GPUs per replica
    GPU-hours / month  = GPUs x 730.5 h;  cost / month = GPU-hours x the service's GPU-hour price
    margin             = 1 - cost / (forecast tokens per month / 1e6 x price per Mtok)

Intervals carry through: the replicas' low uses the per-replica high and the other way round.
Everything is "baseline" in the method's sense: one replica as measured in the sweep, the
client's clock (the load-test tool's percentiles), not the engine's histograms.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property

import numpy as np
from django.conf import settings
from django.utils import timezone

from analysis import capacity
from analysis.capacity import BELOW, BEYOND, WITHIN, Estimate
from analysis.percentiles import QUANTILE_OF
from collectors.models import HOUR, ServiceMergedRollup
from core.links import site_url
from dossiers.models import Experiment, Service
from loadtests.sweeps import CONCURRENCY, RATE, Sweep, same_workload, sweeps_for_service
from planning.goodput import RunGoodput, sweep_goodput
from planning.objectives import Objective, service_objectives

HOURS_PER_MONTH = 730.5  # 365.25 days x 24 h / 12
FORECAST_DAYS = 28
FORECAST_QUANTILE = 0.95  # of the hourly request rates over FORECAST_DAYS


def headroom() -> float:
    """The share of each replica's capacity kept free (PERFHUB_PLANNER_HEADROOM, 0.2)."""
    return float(getattr(settings, "PERFHUB_PLANNER_HEADROOM", 0.2))


class PlanError(ValueError):
    """The service cannot be planned (no usable sweep, bad input); one line saying why."""


@dataclass(frozen=True)
class Count:
    """A whole number with its interval (replicas, GPUs)."""

    value: int
    low: int
    high: int | None  # None: the per-replica interval reaches below the sweep (no upper bound)
    level: float = capacity.LEVEL

    def to_dict(self) -> dict:
        return {"value": self.value, "low": self.low, "high": self.high, "level": self.level}


@dataclass(frozen=True)
class Forecast:
    requests_per_s: float
    source: str  # "given", or how it was read from live traffic
    peak_requests_per_s: float | None = None  # the live 95th percentile before growth
    growth: float = 1.0

    def to_dict(self) -> dict:
        return {
            "requests_per_s": round(self.requests_per_s, 4),
            "source": self.source,
            "live_p95_hourly_requests_per_s": self.peak_requests_per_s,
            "growth": self.growth,
        }


def live_forecast(service: Service, growth: float = 1.0) -> Forecast | None:
    """The 95th percentile of the service's hourly request rates (summed over its hosts) over
    the last 28 days, times `growth`; None without live traffic."""
    since = timezone.now() - timedelta(days=FORECAST_DAYS)
    rates = list(
        ServiceMergedRollup.objects.filter(
            service=service, resolution_s=HOUR, start__gte=since, qps__isnull=False
        ).values_list("qps", flat=True)
    )
    if not rates:
        return None
    peak = float(np.quantile(rates, FORECAST_QUANTILE))
    return Forecast(
        peak * growth,
        # Say how much of the window had traffic: a service live for two weeks has half the
        # hours a "28 days" peak suggests, and may not have met its monthly peak yet.
        f"live: 95th percentile of the hourly request rates of the last {FORECAST_DAYS} days "
        f"({len(rates)} hours with traffic of {FORECAST_DAYS * 24}), x{growth:g} growth",
        peak,
        growth,
    )


# --- Curves from a sweep ------------------------------------------------------------------------


def curve_points(sweep: Sweep, metric: str, percentile: str) -> list[capacity.Point]:
    """One point per run carrying the percentile: its load, value, request count and the
    log-spread of its distribution (from its P50 of the same metric)."""
    points = []
    quantile = capacity_quantile(percentile)
    for run in sweep.every_run:
        value = run.latency(metric, percentile)
        if not value or value <= 0:
            continue
        p50 = run.latency(metric, "p50")
        others = {q: run.latency(metric, label) for label, q in QUANTILE_OF.items()}
        sigma = capacity.point_spread(p50, value, quantile, run.request_count, others)
        points.append(capacity.Point(sweep.x(run), value, run.request_count, sigma))
    return points


def capacity_quantile(percentile: str) -> float:
    return QUANTILE_OF[percentile]


def fit(sweep: Sweep, metric: str, percentile: str) -> capacity.Curve | None:
    points = curve_points(sweep, metric, percentile)
    if len({p.x for p in points}) < 2:
        return None
    return capacity.fit_curve(points, capacity_quantile(percentile))


def usable_sweeps(service: Service) -> list[Sweep]:
    """The service's sweeps with a latency percentile at two loads or more, fullest first."""
    found = []
    for sweep in sweeps_for_service(service):
        if any(fit(sweep, m, "p99") or fit(sweep, m, "p50") for m in ("ttft", "tpot", "e2e")):
            found.append(sweep)
    found.sort(key=lambda s: (-len(s.runs), -max(r.measured_at.timestamp() for r in s.runs)))
    return found


def choose_sweep(
    service: Service, axis: str | None = None, containing: int | None = None
) -> tuple[Sweep, list[Sweep]]:
    """(the sweep to plan from, the service's other usable sweeps): the one holding the run
    `containing` when given, else the fullest (the newest of equally full ones), on `axis`
    when given. PlanError saying why when there is none."""
    sweeps = usable_sweeps(service)
    if axis is not None:
        sweeps = [s for s in sweeps if s.axis == axis]
    what = {None: "", CONCURRENCY: "concurrency ", RATE: "request-rate "}[axis]
    if not sweeps:
        raise PlanError(
            f"{service.slug} has no usable {what}sweep: import load tests of one configuration "
            "at two loads or more (concurrency or request rate) first"
        )
    if containing is not None:
        chosen = [s for s in sweeps if containing in s.run_pks]
        if not chosen:
            raise PlanError(
                f"run {containing} is in no usable {what}sweep of {service.slug}: give a run "
                "of one of its sweeps (the planner page lists them)"
            )
        return chosen[0], [s for s in sweeps if s is not chosen[0]]
    return sweeps[0], sweeps[1:]


# --- Per replica ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PerReplica:
    axis: str
    result: capacity.MaxLoad
    max_concurrency: Estimate | None
    max_request_rate: Estimate | None
    curves: dict[str, capacity.Curve]
    missing: tuple[str, ...]  # objectives the sweep's runs do not carry

    @property
    def limited_by(self) -> str | None:
        return self.result.limited_by

    def to_dict(self) -> dict:
        return {
            "axis": self.axis,
            "status": self.result.status,
            "message": self.result.message,
            "max_request_rate": self.max_request_rate.to_dict() if self.max_request_rate else None,
            "max_concurrency": self.max_concurrency.to_dict() if self.max_concurrency else None,
            "limited_by": self.limited_by,
            "objectives_not_measured": list(self.missing),
            "measured_up_to": self.result.x_max,
        }


def _throughput_at(sweep: Sweep, load: Estimate) -> Estimate | None:
    """The request rate a replica measured at a load setting (concurrency, or offered rate): the
    runs' measured QPS interpolated monotonically, with its noise (`capacity.rate_at`)."""
    runs = [r for r in sweep.runs if r.qps]
    if len({sweep.x(r) for r in runs}) < 2:
        return None
    return capacity.rate_at([sweep.x(r) for r in runs], [r.qps for r in runs], load)


def _concurrency_at(curves: dict[str, capacity.Curve], load: Estimate) -> Estimate | None:
    """Little's law: requests in flight = rate x latency, with the fitted median end-to-end."""
    e2e = curves.get("e2e_p50_ms")
    if e2e is None:
        return None

    def at(rate: float) -> float:
        return rate * e2e.predict(rate) / 1000

    return Estimate(at(load.value), at(load.low), at(load.high), load.level)


def per_replica(sweep: Sweep, objectives: list[Objective]) -> PerReplica:
    if not objectives:
        raise PlanError("no objective to plan for: give --slo NAME=MS or set the service's SLO")
    curves: dict[str, capacity.Curve] = {}
    limits: dict[str, tuple[capacity.Curve, float]] = {}
    missing = []
    for objective in objectives:
        curve = fit(sweep, objective.metric, objective.percentile)
        if curve is None:
            missing.append(objective.name)
            continue
        curves[objective.name] = curve
        limits[objective.name] = (curve, objective.limit_ms)
    for metric in ("ttft", "tpot", "e2e"):
        for percentile in ("p50", "p90", "p99"):
            name = f"{metric}_{percentile}_ms"
            if name not in curves and (curve := fit(sweep, metric, percentile)) is not None:
                curves[name] = curve
    if not limits:
        raise PlanError(
            f"the sweep's runs carry none of the objectives ({', '.join(missing)}): "
            "plan with an objective they measure"
        )
    result = capacity.max_load(limits)
    rate = concurrency = None
    if result.load is not None:
        if sweep.axis == CONCURRENCY:
            concurrency = result.load
            rate = _throughput_at(sweep, result.load)
        else:
            # The rate served, not the rate offered: past saturation a replica serves less.
            rate = _throughput_at(sweep, result.load) or result.load
            concurrency = _concurrency_at(curves, result.load)
    return PerReplica(sweep.axis, result, concurrency, rate, curves, tuple(missing))


def predict_at(per: PerReplica, x: float) -> dict[str, dict]:
    """Each fitted percentile at load x, `{value, low, high, level}`; past the sweep: refused."""
    z = capacity.percentile_z(0.5 + capacity.LEVEL / 2)
    out = {}
    for name, curve in sorted(per.curves.items()):
        if x > curve.x_max or x < curve.x_min:
            out[name] = {
                "value": None,
                "low": None,
                "high": None,
                "level": capacity.LEVEL,
                "note": f"outside the measured loads {curve.x_min:g} to {curve.x_max:g}: "
                f"measure up to {x:g} first",
            }
            continue
        value = curve.predict(x)
        spread = math.exp(z * capacity.CALIBRATION * curve.noise_at(x))
        out[name] = Estimate(value, value / spread, value * spread).to_dict()
    return out


# --- The plan ------------------------------------------------------------------------------------


@dataclass
class Plan:
    service: Service
    sweep: Sweep
    objectives: list[Objective]
    per_replica: PerReplica
    forecast: Forecast | None
    headroom: float
    replicas: Count | None = None
    gpus: Count | None = None
    gpu_hours_per_month: Estimate | None = None
    cost_per_month: Estimate | None = None
    margin: Estimate | None = None
    notes: list[str] = field(default_factory=list)
    goodput: list[RunGoodput] = field(default_factory=list)
    at_load: dict | None = None
    at_load_x: float | None = None
    # The service's other usable sweeps (other configurations or workloads), fullest first.
    other_sweeps: list[Sweep] = field(default_factory=list)
    # Reverted experiments whose change this plan's sweep carries (`reverted_by`).
    reverted_by: list[Experiment] = field(default_factory=list)

    @property
    def runs(self) -> list[int]:
        return sorted(self.sweep.run_pks)

    @property
    def currency(self) -> str:
        return self.service.currency

    def _label(self, name: str) -> str:
        """An objective as people read it ("E2E P99 ≤ 6,000 ms"), by its name."""
        return next((o.label for o in self.objectives if o.name == name), name)

    @cached_property
    def others_reverted_by(self) -> dict[int, list[Experiment]]:
        """Each other sweep's reverted experiments (`reverted_by`), by its key: a reader choosing
        another sweep is told before planning it. Read only where the plan is shown whole (its
        JSON, the command's text), not by the alternatives table's many plans."""
        return {s.key: reverted_by(self.service, s) for s in self.other_sweeps}

    @cached_property
    def provisioning(self) -> tuple[str, str] | None:
        """How the replicas running today compare with the plan, as (tone, words): "2 short"
        (bad) when they cannot carry the forecast at the per-replica rate even without
        headroom, "1 short of 20% headroom" (warn) when they carry it only without, "2 spare"
        (info) above the plan's high end, else enough (ok, no words); "up to 2 short" (warn)
        when the sweep never reached the limit (the plan's count is then a ceiling). None
        without a replica count."""
        rate = self.per_replica.max_request_rate
        if self.replicas is None or self.forecast is None or rate is None or rate.value <= 0:
            return None
        today, need = self.service.replicas, self.replicas
        if self.per_replica.result.status == BEYOND:
            # The sweep never reached the limit: the per-replica rate is a floor, the replica
            # count a ceiling, so a shortfall is only possible.
            short = need.value - today
            return ("warn", f"up to {short} short") if short > 0 else ("ok", "")
        if today < math.ceil(self.forecast.requests_per_s / rate.value - 1e-9):
            return "bad", f"{need.value - today} short"
        if today < need.value:
            return "warn", f"{need.value - today} short of {self.headroom:.0%} headroom"
        if need.high is not None and today > need.high:
            return "info", f"{today - need.value} spare"
        return "ok", ""

    @property
    def binding_label(self) -> str | None:
        """The objective that binds first, as people read it; None when none binds."""
        name = self.per_replica.limited_by
        return None if name is None else self._label(name)

    @property
    def limit_detail(self) -> str:
        """What the binding objective alone does not say: ties, or why nothing binds inside the
        sweep ("" when the binding objective says it all)."""
        result = self.per_replica.result
        if result.status == BELOW:
            return "broken even at the lowest measured load: measure lower loads first"
        if result.status == BEYOND:
            return result.message
        if result.tied_with:
            return "tied with " + ", ".join(self._label(name) for name in result.tied_with)
        return ""

    def to_dict(self, absolute_url: Callable[[str], str] | None = None) -> dict:
        """The plan as JSON (the command's `--json`, the API's answer). `absolute_url` turns a
        path into the address a reader opens (the API: the request's host); SITE_URL by default."""
        url = absolute_url or site_url
        data = {
            "service": self.service.slug,
            "sweep": _sweep_dict(self.sweep),
            "other_sweeps": [
                {
                    "title": s.title,
                    "configuration": s.configuration,
                    "runs": sorted(s.run_pks),
                    "reverted_by": [
                        reverted_dict(x, url) for x in self.others_reverted_by.get(s.key, [])
                    ],
                }
                for s in self.other_sweeps
            ],
            "basis": "baseline: one replica as measured by the load-test tool (client clock)",
            "objectives": [o.to_dict() for o in self.objectives],
            "per_replica": self.per_replica.to_dict(),
            "forecast": self.forecast.to_dict() if self.forecast else None,
            "headroom": self.headroom,
            "replicas": self.replicas.to_dict() if self.replicas else None,
            "gpus": self.gpus.to_dict() if self.gpus else None,
            "gpu_hours_per_month": _d(self.gpu_hours_per_month),
            "cost_per_month": _d(self.cost_per_month),
            "currency": self.currency,
            "margin": _d(self.margin),
            "runs": self.runs,
            "goodput": [g.to_dict() for g in self.goodput],
            "notes": self.notes,
            "reverted_by": [reverted_dict(x, url) for x in self.reverted_by],
        }
        if self.at_load is not None:
            data["at"] = {self.sweep.axis: self.at_load_x, "percentiles": self.at_load}
        return data


def _sweep_dict(sweep: Sweep) -> dict:
    return {
        "title": sweep.title,
        "axis": sweep.axis,
        "prompt_tokens": sweep.prompt_tokens,
        "output_tokens": sweep.output_tokens,
        "configuration": sweep.configuration,
    }


def reverted_dict(experiment: Experiment, absolute_url: Callable[[str], str] = site_url) -> dict:
    """A reverted experiment as the plan's JSON names it: what it changed and where to read it."""
    return {
        "id": experiment.pk,
        "title": experiment.title,
        "variable": experiment.variable_key,
        "value": experiment.value_to,
        "url": absolute_url(experiment.get_absolute_url()),
    }


def _d(value: Estimate | None) -> dict | None:
    return value.to_dict() if value else None


def _replicas(load: float, rate: Estimate, spare: float) -> Count:
    def need(per: float) -> int | None:
        usable = per * (1 - spare)
        return max(1, math.ceil(load / usable - 1e-9)) if usable > 0 else None

    return Count(need(rate.value), need(rate.high), need(rate.low), rate.level)


def plan_for(
    service: Service,
    *,
    objectives: list[Objective] | None = None,
    load: float | None = None,
    growth: float = 1.0,
    spare: float | None = None,
    at_concurrency: float | None = None,
    at_rate: float | None = None,
    sweep_of: int | None = None,
) -> Plan:
    """The plan (module docstring). `objectives` default to the service's; `load` (req/s) to
    the live forecast times `growth`; the sweep to the fullest, or the one holding the run
    `sweep_of`. PlanError when there is no usable sweep."""
    if load is not None and not (math.isfinite(load) and load > 0):
        raise PlanError("load must be a positive number of requests per second")
    if not (math.isfinite(growth) and growth > 0):
        raise PlanError("growth must be a positive factor, e.g. 1.5")
    spare = headroom() if spare is None else spare
    if not 0 <= spare < 1:
        raise PlanError("headroom must be between 0 and 1 (a share of each replica kept free)")
    axis = CONCURRENCY if at_concurrency is not None else RATE if at_rate is not None else None
    sweep, other_sweeps = choose_sweep(service, axis, sweep_of)
    objectives = service_objectives(service) if objectives is None else objectives
    per = per_replica(sweep, objectives)
    forecast = (
        Forecast(load * growth, "given" + (f", x{growth:g} growth" if growth != 1 else ""))
        if load is not None
        else live_forecast(service, growth)
    )
    plan = Plan(service, sweep, objectives, per, forecast, spare)
    plan.other_sweeps = other_sweeps
    plan.reverted_by = reverted_by(service, sweep)
    plan.goodput = sweep_goodput(sweep, [o for o in objectives if o.name not in per.missing])
    if axis is not None:
        x = at_concurrency if axis == CONCURRENCY else at_rate
        if not (math.isfinite(x) and x > 0):
            raise PlanError("the load to predict at must be a positive number")
        plan.at_load, plan.at_load_x = predict_at(per, x), x
    if per.result.status == BEYOND:
        plan.notes.append(per.result.message + " (replicas below are an upper bound)")
        if forecast is not None and sweep.axis == RATE:
            today = forecast.requests_per_s / service.replicas
            if today > per.result.x_max:
                plan.notes.append(
                    f"measure up to {today:.3g} req/s first: the load each of today's "
                    f"{service.replicas} replicas would carry"
                )
    if per.result.status == BELOW:
        plan.notes.append(per.result.message)
        return plan
    if forecast is None:
        plan.notes.append("no live traffic in the last 28 days: give a load to plan for")
        return plan
    rate = per.max_request_rate
    if rate is None or rate.value <= 0:
        plan.notes.append("the sweep's runs carry no request throughput: cannot size replicas")
        return plan
    plan.replicas = _replicas(forecast.requests_per_s, rate, spare)
    g = service.gpus_per_replica
    high = None if plan.replicas.high is None else plan.replicas.high * g
    plan.gpus = Count(plan.replicas.value * g, plan.replicas.low * g, high)
    if high is None:
        plan.notes.append(
            "the per-replica interval reaches below the lowest measured load: the high ends of "
            "replicas, GPUs and cost are unknown until lower loads are measured"
        )
    plan.gpu_hours_per_month = Estimate(
        plan.gpus.value * HOURS_PER_MONTH,
        plan.gpus.low * HOURS_PER_MONTH,
        math.inf if high is None else high * HOURS_PER_MONTH,
    )
    plan.cost_per_month = plan.gpu_hours_per_month.scaled(float(service.gpu_hour_price))
    plan.margin = _margin(service, sweep, forecast.requests_per_s, plan.cost_per_month)
    if per.result.status == WITHIN and (plan.replicas.high or math.inf) > plan.replicas.value * 2:
        plan.notes.append("wide interval: the sweep is sparse or noisy near the limit")
    return plan


def _margin(service: Service, sweep: Sweep, load: float, cost: Estimate) -> Estimate | None:
    """Margin at the service's price for the tokens the forecast load carries (token basis)."""
    if service.price_per_mtok is None or not sweep.output_tokens:
        return None
    per_request = sweep.output_tokens
    if service.token_basis == Service.TokenBasis.TOTAL:
        if sweep.prompt_tokens is None:
            return None
        per_request += sweep.prompt_tokens
    revenue = load * per_request * 3600 * HOURS_PER_MONTH / 1e6 * float(service.price_per_mtok)
    if revenue <= 0:
        return None
    return Estimate(1 - cost.value / revenue, 1 - cost.high / revenue, 1 - cost.low / revenue)


# --- Across services: the same model on other GPU types or configurations ------------------------


@dataclass(frozen=True)
class Alternative:
    service: Service
    plan: Plan | None
    problem: str = ""
    # Experiments of the service that reverted a change this configuration carries.
    reverted_by: tuple[Experiment, ...] = ()

    @property
    def holds(self) -> bool:
        return self.plan is not None and self.plan.cost_per_month is not None


def reverted_by(service: Service, sweep: Sweep) -> list[Experiment]:
    """The service's reverted experiments whose change the sweep's configuration carries: one
    recorded from a run of the sweep (its after), or one whose variable has the reverted value
    in the sweep's parameters (`max_num_seqs` = 512). A plan from such a sweep prices a setting
    the team measured and turned back, which a reader of the plan must be told."""
    reverted = service.experiments.filter(verdict=Experiment.Verdict.REVERTED)
    from_sweep = set(
        reverted.filter(after__source_load_test__in=sweep.run_pks).values_list("pk", flat=True)
    )
    return [
        x
        for x in reverted
        if x.pk in from_sweep or sweep.parameters.get(x.variable_key) == x.value_to
    ]


def cheapest_caveat(rows: list[Alternative]) -> Alternative | None:
    """The cheapest alternative that holds the SLO when an experiment reverted its change (it
    must not be presented as the cheapest without saying so); None otherwise."""
    cheapest = next((row for row in rows if row.holds), None)
    return cheapest if cheapest is not None and cheapest.reverted_by else None


def alternatives(plan: Plan) -> list[Alternative]:
    """Every service serving the same model, planned for this plan's load and objectives from
    its fullest sweep, and this service in each configuration it was measured in (its other
    sweeps of the same workload); cheapest first (those that cannot hold the SLO, or have no
    sweep, last)."""
    if plan.forecast is None:
        return []
    rows = []
    others = Service.objects.filter(model_name__iexact=plan.service.model_name).order_by("slug")
    for other in others:
        row = _alternative(plan, other)
        rows.append(row)
        if other.pk != plan.service.pk or row.plan is None:
            continue
        for sweep in row.plan.other_sweeps:
            if same_workload(plan.sweep.runs[0], sweep.runs[0]):
                rows.append(_alternative(plan, other, sweep_of=sweep.key))
    rows.sort(key=lambda a: (not a.holds, a.plan.cost_per_month.value if a.holds else math.inf))
    return rows


def _alternative(plan: Plan, service: Service, sweep_of: int | None = None) -> Alternative:
    """`service` planned for `plan`'s load, objectives and headroom, or why it cannot be."""
    try:
        other = plan_for(
            service,
            objectives=plan.objectives,
            load=plan.forecast.requests_per_s,
            spare=plan.headroom,
            sweep_of=sweep_of,
        )
    except PlanError as exc:
        return Alternative(service, None, str(exc))
    return Alternative(service, other, "; ".join(other.notes), reverted_by=tuple(other.reverted_by))


__all__ = [
    "BELOW",
    "BEYOND",
    "WITHIN",
    "Plan",
    "PlanError",
    "alternatives",
    "cheapest_caveat",
    "plan_for",
    "reverted_by",
]
