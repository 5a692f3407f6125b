"""Reads that cross apps for the dashboards: a service's live series with its baseline and
events, the fleet overview, and the dossier timeline.

Everything comes from roll-ups (`collectors.selectors` or `ServiceRollup` / `GpuRollup` rows,
never raw samples) and from a fixed number of queries whatever the number of services, hosts
or minutes in the range (the tests hold each page to a budget).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta

from ddsketch import DDSketch
from django.db.models import Count, Prefetch
from django.db.models.functions import TruncDate
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from alerts.models import AlertEvent, AlertInstance
from alerts.selectors import alert_history_for_service, recent_history_for_service
from analysis import cost, sketches
from analysis.alerting import State
from analysis.percentiles import Percentile
from collectors.distributions import Traffic
from collectors.models import HOUR, MINUTE, GpuRollup, Host, ServiceRollup
from collectors.selectors import (
    ServiceMetrics,
    latency_percentiles,
    service_metrics,
    service_token_rate,
)
from dashboards.claims import ClaimCheck, check_claims
from dashboards.live_changes import LiveChange, live_changes
from dashboards.right_now import RightNow, right_now
from dossiers.models import Baseline, ConfigVersion, Experiment, MeasuredRun, Service
from dossiers.selectors import FleetRow, current_baseline, fleet_rows
from loadtests.gate import fingerprint_of, workload_differences
from loadtests.history import HistoryChange, history_changes
from loadtests.models import GateRun, LoadTest, LoadTestSketch, source_run

# Alert history kinds worth a line on a chart; the timeline lists every transition but these
# are the ones a reader of a latency chart needs ("it fired here, it resolved there").
CHART_ALERT_KINDS = (AlertEvent.Kind.FIRING, AlertEvent.Kind.RESOLVED)
MAX_MARKERS = 60
HOST_LOOKBACK = timedelta(days=30)


@dataclass(frozen=True)
class Marker:
    """Something that happened to the service at a moment: drawn on charts, listed in the
    timeline. `tone` picks the colour: bad (firing), ok (resolved, pass), info, warn."""

    kind: str  # "alert" | "deploy" | "experiment" | "gate" | "change" | "baseline"
    at: datetime
    title: str
    detail: str = ""
    url: str = ""
    tone: str = "info"

    @property
    def group(self) -> str:
        """The timeline filter it falls under (TIMELINE_FILTERS)."""
        return MARKER_GROUPS.get(self.kind, self.kind)


# The dossier timeline's filters, in order: a group and its label. Deploys, config versions and
# baseline promotions are one group (what runs, and what it is measured against).
TIMELINE_FILTERS = (
    ("alert", "Alerts"),
    ("deploy", "Deploys and config"),
    ("experiment", "Experiments"),
    ("gate", "Gate runs"),
    ("change", "Steps in live and load-test data"),
)
MARKER_GROUPS = {"baseline": "deploy"}


def _link(name: str, *args) -> str:
    """The URL, or "" while the page it names is not wired (alerts and load-test pages)."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return ""


def _midnight(d: date) -> datetime:
    return datetime.combine(d, time.min, tzinfo=UTC)


def _alert_markers(events: list[AlertEvent]) -> list[Marker]:
    tones = {
        AlertEvent.Kind.FIRING: "bad",
        AlertEvent.Kind.RESOLVED: "ok",
        AlertEvent.Kind.PENDING: "warn",
        AlertEvent.Kind.INACTIVE: "ok",
        AlertEvent.Kind.NO_DATA: "warn",
        AlertEvent.Kind.INSUFFICIENT_DATA: "warn",
        AlertEvent.Kind.ERROR: "bad",
    }
    markers = []
    for event in events:
        detail = event.reason
        if event.value is not None and event.threshold is not None:
            # In the rule's own unit and format ("2,150 ms", "34%"), as the alert pages show it.
            fmt = event.rule.format_value
            detail = f"{fmt(event.value)} against a threshold of {fmt(event.threshold)}. {detail}"
        url = _link("alerts:alert_detail", event.instance_id) if event.instance_id else ""
        markers.append(
            Marker(
                kind="alert",
                at=event.at,
                title=f"{event.rule.name}: {event.get_kind_display()}",
                detail=detail.strip(),
                url=url,
                tone=tones.get(event.kind, "info"),
            )
        )
    return markers


def _deploy_markers(configs: list[ConfigVersion], slug: str) -> list[Marker]:
    """Each version's moment: made current ("deployed"; "rollback from vN" when the version it
    replaced was newer), or only recorded when it is not known to have ever been current (a
    trial), so the timeline never contradicts the dossier's current config."""
    url = reverse("dossiers:configs", args=[slug])
    deployed = sorted((c for c in configs if c.made_current_at), key=lambda c: c.made_current_at)
    markers = []
    for before, c in zip([None, *deployed], deployed, strict=False):
        title, tone = f"Config v{c.version} deployed", "info"
        if before is not None and before.version > c.version:
            title, tone = (
                f"Config v{c.version} deployed again: rollback from v{before.version}",
                "warn",
            )
        markers.append(
            Marker(kind="deploy", at=c.made_current_at, title=title, detail=c.note,
                   url=f"{url}?b={c.version}", tone=tone)
        )  # fmt: skip
    for c in configs:
        if c.made_current_at is None:
            markers.append(
                Marker(kind="deploy", at=c.created_at,
                       title=f"Config v{c.version} recorded, not made current",
                       detail=c.note, url=f"{url}?b={c.version}")
            )  # fmt: skip
    return markers


def _experiment_markers(experiments: list[Experiment]) -> list[Marker]:
    tones = {"adopted": "ok", "reverted": "bad", "pending": "warn", "inconclusive": "info"}
    return [
        Marker(
            kind="experiment",
            at=_midnight(e.run_on),
            title=f"Experiment: {e.title}",
            detail=f"{e.variable_key}: {e.value_from} → {e.value_to} ({e.get_verdict_display()})",
            url=reverse("dossiers:dossier", args=[e.service.slug]) + f"#experiment-{e.pk}",
            tone=tones.get(e.verdict, "info"),
        )
        for e in experiments
    ]


def _by(user, credential: str) -> str:
    """Who made a write: the API credential, else the person."""
    if credential:
        return f"by {credential}"
    return f"by {user.get_username()}" if user is not None else ""


def _baseline_markers(baselines: list[Baseline], slug: str) -> list[Marker]:
    return [
        Marker(
            kind="baseline",
            at=b.promoted_at,
            title=f"Baseline “{b.label}” made current",
            detail=_by(b.promoted_by, b.promoted_via) + _lint_override_text(b),
            url=reverse("dossiers:baseline", args=[slug, b.pk]),
        )
        for b in baselines
    ]


def _lint_override_text(baseline: Baseline) -> str:
    """A promotion that overrode refusing lint findings says so, with its reason."""
    run = source_run(baseline)
    override = run.lint_override if run is not None else None
    if not override:
        return ""
    return (
        f"; promoted despite lint findings ({', '.join(override.get('checks', []))}): "
        f"{override.get('reason', '')}"
    )


def _gate_markers(runs: list[GateRun]) -> list[Marker]:
    tones = {"pass": "ok", "regression": "bad", "refused": "warn"}
    markers = []
    for run in runs:
        by = _by(run.created_by, run.ci_token.credential_label if run.ci_token else "")
        markers.append(
            Marker(
                kind="gate",
                at=run.created_at,
                title=f"Release gate: {run.get_verdict_display()}",
                detail=f"candidate {run.candidate.label}" + (f", {by}" if by else ""),
                url=_link("loadtests:gate_run", run.service.slug, run.pk),
                tone=tones.get(run.verdict, "info"),
            )
        )
    return markers


def _change_markers(changes: list[HistoryChange], slug: str) -> list[Marker]:
    """Steps in the load-test history: worse is "bad", better is "ok"."""
    markers = []
    for change in changes:
        lower_is_better = change.unit != "tok/s"
        worse = change.relative > 0 if lower_is_better else change.relative < 0
        markers.append(
            Marker(
                kind="change",
                at=change.at,
                title=change.title,
                detail=change.detail,
                url=_link("loadtests:detail", slug, change.run.pk),
                tone="bad" if worse else "ok",
            )
        )
    return markers


def _live_change_markers(changes: list[LiveChange]) -> list[Marker]:
    """Steps in the daily live latency: slower is "bad", faster is "ok"."""
    return [
        Marker(
            kind="change",
            at=c.at,
            title=c.title,
            detail=c.detail,
            url=c.url,
            tone="bad" if c.relative > 0 else "ok",
        )
        for c in changes
    ]


def time_markers(*, service: Service, start: datetime, end: datetime) -> list[Marker]:
    """Alerts firing/resolving, deploys and experiments in [start, end], oldest first.

    Three queries. At most MAX_MARKERS (the newest), so a flapping rule cannot bury a chart.
    """
    events = [
        e for e in alert_history_for_service(service, start, end) if e.kind in CHART_ALERT_KINDS
    ][-MAX_MARKERS:]
    # Every version made by `end` (a service has a handful): a deploy in the range may be a
    # rollback from one made before it.
    configs = list(ConfigVersion.objects.filter(service=service, created_at__lte=end))
    experiments = list(
        Experiment.objects.filter(
            service=service, run_on__gte=start.date(), run_on__lte=end.date()
        ).select_related("service")
    )
    deploys = [m for m in _deploy_markers(configs, service.slug) if start <= m.at <= end]
    markers = _alert_markers(events) + deploys + _experiment_markers(experiments)
    return sorted(markers, key=lambda m: m.at)[-MAX_MARKERS:]


def timeline(*, service: Service, limit: int = 50, since: datetime | None = None) -> list[Marker]:
    """The dossier timeline: alert transitions, deploys, experiments, gate runs, baseline
    promotions (with who or which credential promoted) and steps (change points) in the
    load-test history and in the daily live latency, newest first.

    Eight queries, each bounded. `since`: only what happened from then on.
    """
    events = recent_history_for_service(service, timezone.now(), limit, states_only=True)
    configs = list(ConfigVersion.objects.filter(service=service).order_by("-created_at")[:limit])
    experiments = list(Experiment.objects.filter(service=service).select_related("service")[:limit])
    runs = list(
        GateRun.objects.filter(service=service)
        .select_related("candidate", "service", "ci_token", "created_by")
        .order_by("-created_at")[:limit]
    )
    promotions = list(
        Baseline.objects.filter(service=service, promoted_at__isnull=False)
        .select_related("promoted_by", "source_load_test")
        .order_by("-promoted_at")[:limit]
    )
    markers = (
        _alert_markers(events)
        + _deploy_markers(configs, service.slug)
        + _experiment_markers(experiments)
        + _gate_markers(runs)
        + _change_markers(history_changes(service=service), service.slug)
        + _live_change_markers(live_changes(service=service))
        + _baseline_markers(promotions, service.slug)
    )
    if since is not None:
        markers = [m for m in markers if m.at >= since]
    return sorted(markers, key=lambda m: m.at, reverse=True)[:limit]


# ---------------------------------------------------------------------------------------------
# One service


@dataclass
class ServiceDashboard:
    service: Service
    start: datetime
    end: datetime
    hosts: list[str] | None  # the filter; None: all hosts
    available_hosts: list[str]
    metrics: ServiceMetrics
    baseline: Baseline | None
    markers: list[Marker]

    @property
    def gpus(self) -> int:
        """GPUs the costs are charged for: those seen on the filtered hosts, else the service's."""
        if self.hosts is not None:
            seen = {(g.host, g.gpu_index) for g in self.metrics.gpus}
            if seen:
                return len(seen)
        return self.service.total_gpus


def service_hosts(*, service: Service, now: datetime) -> list[str]:
    """Hosts that served the service in the last 30 days (from hourly roll-ups), one query."""
    return list(
        Host.objects.filter(
            pk__in=ServiceRollup.objects.filter(
                service=service, resolution_s=HOUR, start__gte=now - HOST_LOOKBACK
            ).values("host_id")
        )
        .order_by("name")
        .values_list("name", flat=True)
    )


def service_dashboard(
    *, service: Service, start: datetime, end: datetime, hosts: list[str] | None = None
) -> ServiceDashboard:
    """Everything the service dashboard draws; a fixed number of queries."""
    return ServiceDashboard(
        service=service,
        start=start,
        end=end,
        hosts=hosts,
        available_hosts=service_hosts(service=service, now=end),
        metrics=service_metrics(service=service, start=start, end=end, hosts=hosts),
        baseline=current_baseline(service),
        markers=time_markers(service=service, start=start, end=end),
    )


# ---------------------------------------------------------------------------------------------
# The fleet


@dataclass(frozen=True)
class FleetService:
    service: Service
    p99: dict[str, Percentile]  # e2e, ttft, tpot over the range, merged across hosts
    requests: int
    tokens_per_second: float | None  # the whole service, on its token basis
    economics: cost.Economics | None
    economics_source: str  # "live", "baseline" or "" (none)
    firing: int
    pending: int
    baseline: Baseline | None

    @property
    def open_alerts(self) -> int:
        """Open means live: firing or pending (a pending alert is a breach not yet long enough)."""
        return self.firing + self.pending

    @property
    def dossier_url(self) -> str:
        return self.service.get_absolute_url()

    @property
    def dashboard_url(self) -> str:
        return reverse("dashboards:service", args=[self.service.slug])

    def slo_status(self, metric: str = "e2e") -> str:
        target = self.service.slo_for(metric)
        p = self.p99.get(metric)
        if target is None or p is None or p.value is None:
            return "no data"
        return "ok" if p.value <= target else "missed"


@dataclass(frozen=True)
class GpuHoursDay:
    day: date
    service_slug: str
    service_name: str
    gpu_hours: float


@dataclass
class FleetDashboard:
    start: datetime
    end: datetime
    services: list[FleetService]
    gpu_hours: list[GpuHoursDay] = field(default_factory=list)
    gpu_hours_start: date | None = None

    @property
    def open_alerts(self) -> int:
        return sum(s.open_alerts for s in self.services)

    @property
    def firing(self) -> int:
        return sum(s.firing for s in self.services)

    @property
    def pending(self) -> int:
        return sum(s.pending for s in self.services)


def _economics(service: Service, tps: float | None) -> cost.Economics | None:
    return service.economics(tokens_per_second=tps, gpus=service.total_gpus)


def fleet_dashboard(*, start: datetime, end: datetime, gpu_days: int = 7) -> FleetDashboard:
    """Every service's P99 and economics over [start, end), open alerts, GPU-hours per day.

    Six queries whatever the number of services or hosts: services (+ current baselines),
    roll-up rows, open alert counts, GPU-hour counts, and the host -> service attribution.
    Ranges up to 6 h read minute rows, longer ones hourly rows.
    """
    services = list(
        Service.objects.select_related("team").prefetch_related(
            Prefetch(
                "baselines",
                queryset=Baseline.objects.filter(is_current=True),
                to_attr="current_baselines",
            )
        )
    )
    source = MINUTE if end - start <= timedelta(hours=6) else HOUR
    floor = datetime.fromtimestamp(int(start.timestamp()) // source * source, tz=UTC)
    traffic: dict[int, dict[int, Traffic]] = defaultdict(lambda: defaultdict(Traffic))
    for row in ServiceRollup.objects.filter(
        resolution_s=source, start__gte=floor, start__lt=end
    ).iterator(chunk_size=2000):
        traffic[row.service_id][row.host_id].add_row(row)
    live_alerts: dict[tuple[int, str], int] = {
        (sid, state): n
        for sid, state, n in AlertInstance.objects.live()
        .values_list("service_id", "state")
        .annotate(n=Count("id"))
    }

    rows = []
    for service in services:
        by_host = traffic.get(service.pk, {})
        merged = Traffic()
        for t in by_host.values():
            merged.requests += t.requests
            for metric, items in t.sketches.items():
                merged.sketches[metric] += items
            for metric, items in t.buckets.items():
                merged.buckets[metric] += items
        p99 = {m: latency_percentiles(merged, m, qs=(0.99,))[0] for m in ("e2e", "ttft", "tpot")}
        baseline = service.current_baselines[0] if service.current_baselines else None
        tps = service_token_rate(by_host.values(), service.token_basis)
        economics, source_label = _economics(service, tps), "live"
        if economics is None and baseline is not None:
            economics, source_label = baseline.economics(service), "baseline"
        rows.append(
            FleetService(
                service=service,
                p99=p99,
                requests=merged.requests,
                tokens_per_second=tps,
                economics=economics,
                economics_source=source_label if economics else "",
                firing=live_alerts.get((service.pk, State.FIRING), 0),
                pending=live_alerts.get((service.pk, State.PENDING), 0),
                baseline=baseline,
            )
        )
    days_start = (end - timedelta(days=gpu_days - 1)).date()
    return FleetDashboard(
        start=start,
        end=end,
        services=rows,
        gpu_hours=gpu_hours_per_day(services=services, start=_midnight(days_start), end=end),
        gpu_hours_start=days_start,
    )


def gpu_hours_per_day(
    *, services: list[Service], start: datetime, end: datetime
) -> list[GpuHoursDay]:
    """GPU-hours per day per service, from hourly GPU roll-ups (two queries).

    A GPU that reported in an hour counts that hour (allocation basis: a reserved GPU is paid
    for the hour). GPUs belong to hosts, not services: a host's GPU-hours go to the services
    it served that day, split evenly when it served several.
    """
    by_pk = {s.pk: s for s in services}
    counts = (
        GpuRollup.objects.filter(resolution_s=HOUR, start__gte=start, start__lt=end)
        .annotate(day=TruncDate("start"))
        .values_list("host_id", "day")
        .annotate(n=Count("id"))
    )
    served: dict[tuple[int, date], set[int]] = defaultdict(set)
    for host_id, day, service_id in (
        ServiceRollup.objects.filter(resolution_s=HOUR, start__gte=start, start__lt=end)
        .annotate(day=TruncDate("start"))
        .values_list("host_id", "day", "service_id")
        .distinct()
    ):
        served[(host_id, day)].add(service_id)
    hours: dict[tuple[date, int], float] = defaultdict(float)
    for host_id, day, n in counts:
        owners = [pk for pk in served.get((host_id, day), ()) if pk in by_pk]
        for pk in owners:
            hours[(day, pk)] += n / len(owners)
    ordered = sorted(hours.items(), key=lambda kv: (kv[0][0], by_pk[kv[0][1]].name))
    return [GpuHoursDay(day, by_pk[pk].slug, by_pk[pk].name, value) for (day, pk), value in ordered]


# ---------------------------------------------------------------------------------------------
# Load tests: baseline vs candidate


@dataclass(frozen=True)
class RunSide:
    role: str  # "baseline" or "candidate"
    label: str
    run: MeasuredRun
    sketches: dict[str, DDSketch]  # per-request distributions by family (ms)


@dataclass(frozen=True)
class LoadTestComparison:
    service: Service
    baseline: RunSide
    candidate: RunSide
    # Why the two workloads differ (the gate refuses such a pair); empty: the same shape.
    shape_differences: list[str] = field(default_factory=list)
    baseline_shape: str = ""
    candidate_shape: str = ""


def _sketches(load_test_id: int | None, by_test: dict[int, dict[str, DDSketch]]) -> dict:
    return by_test.get(load_test_id, {}) if load_test_id else {}


def loadtest_choices(*, service: Service, limit: int = 100) -> tuple[list, list]:
    """(baselines, load tests) of the service to pick from, newest first; two queries."""
    baselines = list(service.baselines.only("pk", "label", "measured_at", "is_current"))
    tests = list(service.load_tests.only("pk", "label", "measured_at", "format")[:limit])
    return baselines, tests


def loadtest_comparison(
    *, service: Service, candidate_id: int, baseline_id: int | None = None
) -> LoadTestComparison | None:
    """The candidate load test beside a baseline (default: the current one); None if either
    is missing. Per-request sketches come from the baseline's source load test, if it has one.
    Three queries."""
    candidate = LoadTest.objects.filter(service=service, pk=candidate_id).first()
    baselines = service.baselines.all()
    if baseline_id is not None:
        baseline = baselines.filter(pk=baseline_id).first()
    else:
        baseline = baselines.filter(is_current=True).first()
    if candidate is None or baseline is None:
        return None
    source_id = LoadTest.objects.filter(promoted_to=baseline).values_list("pk", flat=True).first()
    ids = [candidate.pk] + ([source_id] if source_id else [])
    by_test: dict[int, dict[str, DDSketch]] = defaultdict(dict)
    for item in LoadTestSketch.objects.filter(load_test_id__in=ids):
        by_test[item.load_test_id][item.family] = sketches.loads(bytes(item.sketch))
    return LoadTestComparison(
        service=service,
        baseline=RunSide("baseline", baseline.label, baseline, _sketches(source_id, by_test)),
        candidate=RunSide(
            "candidate", candidate.label, candidate, _sketches(candidate.pk, by_test)
        ),
        shape_differences=workload_differences(baseline, candidate),
        baseline_shape=fingerprint_of(baseline).summary(),
        candidate_shape=fingerprint_of(candidate).summary(),
    )


# --- The fleet home page ---------------------------------------------------------------------


@dataclass(frozen=True)
class FleetHomeRow:
    """A fleet row: the dossier's figures (baseline), the claim check (live), open alerts."""

    base: FleetRow
    check: ClaimCheck
    firing: int
    pending: int
    right_now: RightNow | None = None

    @property
    def service(self) -> Service:
        return self.base.service


def fleet_home(*, q: str = "", sort: str = "name") -> list[FleetHomeRow]:
    """The fleet table with live figures: the dossier's rows (2 queries), the claim checks of
    every service (3), and live alert counts (1), whatever the fleet's size."""
    rows = fleet_rows(q=q, sort=sort)
    services = [r.service for r in rows]
    checks = check_claims(services, {r.service.pk: r.baseline for r in rows})
    counts: dict[tuple[int, str], int] = {
        (sid, state): n
        for sid, state, n in AlertInstance.objects.live()
        .filter(service__in=services)
        .values_list("service_id", "state")
        .annotate(n=Count("pk"))
    }
    verdicts = right_now(services, now=timezone.now())
    return [
        FleetHomeRow(
            base=r,
            check=checks[r.service.pk],
            firing=counts.get((r.service.pk, "firing"), 0),
            pending=counts.get((r.service.pk, "pending"), 0),
            right_now=verdicts[r.service.pk],
        )
        for r in rows
    ]
