"""Reads that cross apps for the dashboards: a service's live series with its baseline and
events, the fleet overview, load-test comparison and the fleet home (the dossier timeline and
the chart markers are `dashboards.timeline`).

Everything comes from roll-ups (`collectors.selectors` or `ServiceRollup` / `GpuRollup` rows,
never raw samples) and from a fixed number of queries whatever the number of services, hosts
or minutes in the range (the tests hold each page to a budget).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from ddsketch import DDSketch
from django.db.models import Count, Prefetch
from django.db.models.functions import TruncDate
from django.urls import reverse
from django.utils import timezone

from alerts.models import AlertInstance
from analysis import cost, sketches
from analysis.alerting import State
from analysis.percentiles import MET, MISSED, UNSURE, Percentile
from collectors.distributions import Traffic
from collectors.economics import service_token_rate
from collectors.models import HOUR, MINUTE, GpuRollup, Host, ServiceRollup
from collectors.selectors import ServiceMetrics, latency_percentiles, service_metrics
from dashboards.claims import ClaimCheck, check_claims
from dashboards.right_now import RightNow, right_now
from dashboards.timeline import Marker, midnight, time_markers
from dossiers.models import Baseline, MeasuredRun, Service
from dossiers.selectors import FleetRow, current_baseline, fleet_rows
from loadtests.gate import fingerprint_of, workload_differences
from loadtests.models import LoadTest, LoadTestSketch

HOST_LOOKBACK = timedelta(days=30)


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
    span: str = ""  # the range in words ("last 24 h"), what "live" figures are over

    @property
    def economics_label(self) -> str:
        """What stands next to the cost and margin: "live, last 24 h" (the dashboard's range,
        not the home page's claims window) or the baseline they fell back to."""
        if self.economics_source == "live":
            return f"live, {self.span}" if self.span else "live"
        if self.economics_source == "baseline":
            return "baseline (no live tokens)"
        return ""

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
        """ "ok", "missed", "unsure" (an engine histogram's bucket holds the SLO: its
        interpolated P99 proves neither) or "no data"."""
        target = self.service.slo_for(metric)
        p = self.p99.get(metric)
        verdict = None if target is None or p is None else p.against(target)
        return {MET: "ok", MISSED: "missed", UNSURE: "unsure"}.get(verdict, "no data")


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


def fleet_dashboard(
    *, start: datetime, end: datetime, gpu_days: int = 7, span: str = ""
) -> FleetDashboard:
    """Every service's P99 and economics over [start, end), open alerts, GPU-hours per day.

    Six queries whatever the number of services or hosts: services (+ current baselines),
    roll-up rows, open alert counts, GPU-hour counts, and the host -> service attribution.
    Ranges up to 6 h read minute rows, longer ones hourly rows. `span` names the range in
    words (`TimeRange.label`); by default its start and end.
    """
    span = span or f"{start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC"
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
                span=span,
            )
        )
    days_start = (end - timedelta(days=gpu_days - 1)).date()
    return FleetDashboard(
        start=start,
        end=end,
        services=rows,
        gpu_hours=gpu_hours_per_day(services=services, start=midnight(days_start), end=end),
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
