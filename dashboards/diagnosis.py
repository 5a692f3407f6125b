"""Diagnosis over a time window: the symptom-table rules (analysis.diagnosis) fed from roll-ups.

What the rules see of a window [start, end) of a service, from `collectors.selectors` only
(roll-ups, at the resolution the dashboard would use; never raw samples for long ranges):

  gpu_util / sm_active / dram_active   mean over every GPU point of the window
  requests_waiting / requests_running  mean over the points (each point sums its hosts)
  e2e P50 / P99, TTFT P99              merged over the whole window (sketches or bucket deltas
                                       merged, then the percentile taken: never averaged)
  kv_cache_usage                       the highest point (a point is the hosts' mean)
  preemptions, finished_requests       summed over the window's rows (vLLM's preemptions, SGLang's
                                       retractions). Only the rows whose engine counted them add
                                       to preemptions, and the requests finished in those rows
                                       are their share's denominator; no row counted them (TGI,
                                       Triton, an SGLang without a retraction total, dcgm-exporter
                                       or pushed requests only): None, "not counted", never 0
  memory_over_time                     (hours since start, memory used) per point: each GPU's
                                       high-water mark in the point, averaged over the GPUs
  latency_since_restart                (minutes since restart, e2e P99) per minute for an hour
                                       after the latest restart, on the restarted host

A restart is a scrape window whose counters went down (`ScrapeWindow.reset_detected`). That is
the one raw table read here: a single-row lookup. Raw windows are kept
PERFHUB_RAW_RETENTION_DAYS, so older restarts are not visible. Only restarts leaving enough
time after them for the cold-start rule to judge are considered. OOM errors are not collected
(None), and a window has no sweep.

A proposal is not a Bottleneck: `confirm_window_proposal` re-runs the rules over the same
window server-side and records the one named, with the window and the numbers as evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from django.db import transaction
from django.utils import timezone

from analysis import diagnosis
from analysis.percentiles import Percentile
from collectors.models import ScrapeWindow
from collectors.selectors import MetricsPoint, ServiceMetrics, service_metrics
from dashboards.ranges import RangeError, parse_range
from dossiers import services
from dossiers.models import Bottleneck, Service

# How long after a restart latency is followed, at one point per minute.
RESTART_FOLLOW = timedelta(hours=1)
# A restart needs this much data after it for the cold-start rule to have its steady points.
RESTART_MIN_AFTER = timedelta(minutes=diagnosis.STEADY_AFTER_MINUTES + diagnosis.MIN_STEADY_POINTS)


class UnknownProposal(LookupError):
    """The rule named does not (or no longer) fire over this window."""


@dataclass(frozen=True)
class Restart:
    host: str
    at: datetime  # the scrape that saw the counters go down


@dataclass(frozen=True)
class RuleStatus:
    rule: str
    condition: str  # when the rule fires, in words, with its thresholds
    inputs: tuple[str, ...]  # Observation fields it reads
    fired: bool
    missing: tuple[str, ...]  # inputs with no data (a rule missing its inputs never fires)
    missing_labels: tuple[str, ...] = ()  # the same, as the page's numbers name them
    # A rule firing on any one input was evaluated without these (no data, or not counted by
    # the engine), as the page names them with why: "Requests preempted (not counted by ...)".
    unread: tuple[str, ...] = ()
    unread_labels: tuple[str, ...] = ()


@dataclass(frozen=True)
class ObservedNumber:
    name: str  # Observation field
    label: str
    shown: str | None  # formatted value; None: no data
    missing: str = "no data"  # what the page says when `shown` is None


@dataclass(frozen=True)
class WindowDiagnosis:
    service: Service
    start: datetime
    end: datetime
    hosts: list[str] | None
    resolution_s: int
    observation: diagnosis.Observation
    restart: Restart | None
    proposals: list[diagnosis.Proposal]
    notes: list[str] = field(default_factory=list)  # data the rules were not given, and why

    @property
    def numbers(self) -> list[ObservedNumber]:
        return observed_numbers(self.observation, self.restart)

    @property
    def rules(self) -> list[RuleStatus]:
        fired = {p.rule for p in self.proposals}
        numbers = {n.name: n for n in self.numbers}

        def label(name: str) -> str:
            n = numbers.get(name)
            if n is None:
                return name.replace("_", " ")
            return n.label if n.missing == "no data" else f"{n.label} ({n.missing})"

        out = []
        for rule, condition, inputs, any_of in RULES:
            missing = tuple(n for n in inputs if getattr(self.observation, n) is None)
            absent = missing if not any_of or len(missing) == len(inputs) else ()
            unread = missing if not absent else ()
            out.append(
                RuleStatus(
                    rule, condition, inputs, rule in fired, absent,
                    tuple(label(n) for n in absent), unread, tuple(label(n) for n in unread),
                )
            )  # fmt: skip
        return out

    def describe_window(self) -> str:
        hosts = ", ".join(self.hosts) if self.hosts else "all hosts"
        return f"{self.start:%Y-%m-%d %H:%M} to {self.end:%Y-%m-%d %H:%M} UTC ({hosts})"


def _pct(v: float) -> str:
    return f"{v * 100:.0f}%"


# (rule, condition, inputs, fires on any one input) in analysis.diagnosis's order.
RULES: tuple[tuple[str, str, tuple[str, ...], bool], ...] = (
    (
        "gpu_waiting",
        f"GPU util < {_pct(diagnosis.LOW_GPU_UTIL)} while ≥ "
        f"{diagnosis.MIN_REQUESTS_WAITING:g} request waits on average",
        ("gpu_util", "requests_waiting"),
        False,
    ),
    (
        "long_tail",
        f"e2e P99 > {diagnosis.TAIL_RATIO:g}x P50, P50 within the SLO",
        ("e2e_p50_ms", "e2e_p99_ms"),
        False,
    ),
    (
        "busy_gpu_idle_sms",
        f"GPU util ≥ {_pct(diagnosis.HIGH_GPU_UTIL)} but SM active < "
        f"{diagnosis.SM_TO_GPU_UTIL_RATIO:g}x GPU util",
        ("gpu_util", "sm_active"),
        False,
    ),
    (
        "throughput_flat",
        "throughput flat while the batch grows (needs a load-test sweep, not a time window)",
        ("sweep",),
        False,
    ),
    (
        "memory_capacity",
        f"KV cache ≥ {_pct(diagnosis.KV_CACHE_NEAR_FULL)}, preemptions ≥ "
        f"{_pct(diagnosis.PREEMPTIONS_PER_REQUEST)} of finished requests, or OOM errors",
        ("kv_cache_usage", "preemptions", "oom_errors"),
        True,
    ),
    (
        "cold_start",
        f"P99 in the first {diagnosis.WARMUP_MINUTES:g} min after a restart > "
        f"{diagnosis.COLD_START_RATIO:g}x the steady median (from minute "
        f"{diagnosis.STEADY_AFTER_MINUTES:g})",
        ("latency_since_restart",),
        False,
    ),
    (
        "memory_creep",
        f"GPU memory used rising ≥ {diagnosis.MEMORY_GROWTH_PER_HOUR:.0%} of its mean per hour, "
        f"R² ≥ {diagnosis.MIN_R_SQUARED:g}, over ≥ {diagnosis.MIN_CREEP_HOURS:g} h",
        ("memory_over_time",),
        False,
    ),
)
RULE_NAMES = tuple(r[0] for r in RULES)


# --- Reading a window --------------------------------------------------------------------------


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def _quantile(percentiles: list[Percentile], q: float) -> float | None:
    return next((p.value for p in percentiles if p.q == q), None)


def _ratio(name: str, value: float | None, notes: list[str]) -> float | None:
    """A 0-1 ratio, or None (with a note) when the data is not one: a page must not crash."""
    if value is None:
        return None
    if -1e-9 <= value <= 1 + 1e-9:
        return min(max(value, 0.0), 1.0)
    notes.append(f"{name}: {value:g} is not a ratio between 0 and 1, so it was ignored.")
    return None


def _memory_over_time(metrics: ServiceMetrics, start: datetime) -> list[tuple[float, float]]:
    by_point: dict[datetime, list[float]] = {}
    for g in metrics.gpus:
        if g.mem_used_bytes is not None:
            by_point.setdefault(g.t, []).append(float(g.mem_used_bytes))
    # Only the first point can begin before `start` (its bucket is floored): count it as 0 h.
    return [
        (max((t - start).total_seconds() / 3600, 0.0), sum(used) / len(used))
        for t, used in sorted(by_point.items())
    ]


def _latest_restart(
    service: Service, start: datetime, end: datetime, hosts: list[str] | None
) -> Restart | None:
    windows = ScrapeWindow.objects.filter(
        service=service, reset_detected=True, ts__gte=start, ts__lte=end - RESTART_MIN_AFTER
    )
    if hosts is not None:
        windows = windows.filter(host__name__in=hosts)
    found = windows.order_by("-ts").values_list("host__name", "ts").first()
    return Restart(host=found[0], at=found[1]) if found else None


def _latency_since_restart(
    service: Service, restart: Restart, end: datetime
) -> list[tuple[float, float]]:
    # Minute rows of the restarted host only: other hosts would dilute its cold start.
    first_minute = datetime.fromtimestamp(int(restart.at.timestamp()) // 60 * 60, tz=UTC)
    follow = service_metrics(
        service=service,
        start=first_minute,
        end=min(end, first_minute + RESTART_FOLLOW),
        hosts=[restart.host],
        resolution=60,
    )
    points: list[tuple[float, float]] = []
    for p in follow.points:
        p99 = _quantile(p.latency["e2e"], 0.99)
        if p99 is not None:
            points.append(((p.t - first_minute).total_seconds() / 60, p99))
    return points


def _preemptions(points: list[MetricsPoint]) -> tuple[float | None, float | None]:
    """(preemptions, requests finished where they were counted) over the points that counted
    them; (None, None) when none did: "not counted", not zero."""
    counted = [p for p in points if p.preempted is not None]
    if not counted:
        return None, None
    return (
        sum(p.preempted for p in counted),
        sum(p.finished_counting_preemptions or 0.0 for p in counted),
    )


def _gauge_mean(points: list[MetricsPoint], name: str) -> float | None:
    return _mean([getattr(p, name) for p in points])


def window_diagnosis(
    *, service: Service, start: datetime, end: datetime, hosts: list[str] | None = None
) -> WindowDiagnosis:
    """The observation of [start, end), the rules' proposals, and what was missing.

    Queries: two for the window's roll-ups, one for the latest restart, two more when there is
    one (its host's minute rows for an hour).
    """
    metrics = service_metrics(service=service, start=start, end=end, hosts=hosts)
    notes: list[str] = []
    gpus = metrics.gpus
    kv_points = [p.kv_cache_usage for p in metrics.points if p.kv_cache_usage is not None]
    restart = _latest_restart(service, start, end, hosts)
    since_restart = _latency_since_restart(service, restart, end) if restart else None
    memory = _memory_over_time(metrics, start)
    preemptions, finished_counting_preemptions = _preemptions(metrics.points)
    observation = diagnosis.Observation(
        gpu_util=_ratio("gpu_util", _mean([g.util for g in gpus]), notes),
        sm_active=_ratio("sm_active", _mean([g.sm_active for g in gpus]), notes),
        dram_active=_ratio("dram_active", _mean([g.dram_active for g in gpus]), notes),
        requests_waiting=_gauge_mean(metrics.points, "waiting"),
        requests_running=_gauge_mean(metrics.points, "running"),
        e2e_p50_ms=_quantile(metrics.overall["e2e"], 0.5),
        e2e_p99_ms=_quantile(metrics.overall["e2e"], 0.99),
        ttft_p99_ms=_quantile(metrics.overall["ttft"], 0.99),
        e2e_slo_ms=service.slo_p99_e2e_ms,
        kv_cache_usage=_ratio("kv_cache_usage", max(kv_points, default=None), notes),
        preemptions=preemptions,
        finished_requests=sum(p.finished for p in metrics.points) if metrics.points else None,
        finished_counting_preemptions=finished_counting_preemptions,
        oom_errors=None,  # not collected by any exporter PerfHub reads
        sweep=None,
        latency_since_restart=since_restart or None,
        memory_over_time=memory or None,
    )
    return WindowDiagnosis(
        service=service,
        start=start,
        end=end,
        hosts=hosts,
        resolution_s=metrics.resolution_s,
        observation=observation,
        restart=restart,
        proposals=diagnosis.diagnose(observation),
        notes=notes,
    )


def window_observation(
    *, service: Service, start: datetime, end: datetime, hosts: list[str] | None = None
) -> diagnosis.Observation:
    """What the rules can see of the service over [start, end) (module docstring)."""
    return window_diagnosis(service=service, start=start, end=end, hosts=hosts).observation


def window_proposals(
    *, service: Service, start: datetime, end: datetime, hosts: list[str] | None = None
) -> list[diagnosis.Proposal]:
    return window_diagnosis(service=service, start=start, end=end, hosts=hosts).proposals


# --- Showing the numbers -------------------------------------------------------------------


def _ms(v: float) -> str:
    return f"{v:,.0f} ms"


def _series_summary(points, unit: str) -> str:
    return f"{len(points)} point{'s' if len(points) != 1 else ''} ({unit})"


def observed_numbers(
    obs: diagnosis.Observation, restart: Restart | None = None
) -> list[ObservedNumber]:
    """The observation's fields as a reader sees them; `shown` is None when there is no data."""

    def show(value, fmt) -> str | None:
        return None if value is None else fmt(value)

    restart_text = None
    if obs.latency_since_restart:
        restart_text = _series_summary(obs.latency_since_restart, "minutes, e2e P99")
        if restart is not None:
            restart_text += f" after the restart of {restart.host} at {restart.at:%Y-%m-%d %H:%M}"
    memory_text = None
    if obs.memory_over_time:
        first, last = obs.memory_over_time[0][1], obs.memory_over_time[-1][1]
        memory_text = (
            _series_summary(obs.memory_over_time, "hours, mean GPU memory used")
            + f": {first / 1e9:.2f} GB → {last / 1e9:.2f} GB"
        )
    return [
        ObservedNumber("gpu_util", "GPU util (mean)", show(obs.gpu_util, _pct)),
        ObservedNumber("sm_active", "SM active (mean)", show(obs.sm_active, _pct)),
        ObservedNumber("dram_active", "DRAM active (mean)", show(obs.dram_active, _pct)),
        ObservedNumber(
            "requests_waiting",
            "Requests waiting (mean)",
            show(obs.requests_waiting, "{:.2f}".format),
        ),
        ObservedNumber(
            "requests_running",
            "Requests running (mean)",
            show(obs.requests_running, "{:.2f}".format),
        ),
        ObservedNumber("e2e_p50_ms", "e2e P50 (merged)", show(obs.e2e_p50_ms, _ms)),
        ObservedNumber("e2e_p99_ms", "e2e P99 (merged)", show(obs.e2e_p99_ms, _ms)),
        ObservedNumber("ttft_p99_ms", "TTFT P99 (merged)", show(obs.ttft_p99_ms, _ms)),
        ObservedNumber("e2e_slo_ms", "SLO e2e P99", show(obs.e2e_slo_ms, _ms)),
        ObservedNumber("kv_cache_usage", "KV cache usage (max)", show(obs.kv_cache_usage, _pct)),
        ObservedNumber(
            "preemptions",
            "Requests preempted",
            _preempted_text(obs),
            NOT_COUNTED if obs.finished_requests is not None else "no data",
        ),
        ObservedNumber(
            "finished_requests",
            "Requests finished",
            show(obs.finished_requests, "{:,.0f}".format),
        ),
        ObservedNumber("oom_errors", "OOM errors", show(obs.oom_errors, str)),
        ObservedNumber("latency_since_restart", "Latency since restart", restart_text),
        ObservedNumber("memory_over_time", "GPU memory over time", memory_text),
    ]


# What the page says where the window has data but no engine in it counts preemptions.
NOT_COUNTED = "not counted by this engine"


def _preempted_text(obs: diagnosis.Observation) -> str | None:
    """The preemptions, and over how much of the window where part was not counted."""
    if obs.preemptions is None:
        return None
    text = f"{obs.preemptions:,.0f}"
    over, finished = obs.finished_counting_preemptions, obs.finished_requests
    if over is not None and finished is not None and finished - over >= 0.5:
        text += (
            f" (counted over {over:,.0f} of {finished:,.0f} finished requests; "
            "the rest were served by an engine that does not count preemptions)"
        )
    return text


# --- Confirming ------------------------------------------------------------------------------


def window_from_form(data) -> tuple[datetime, datetime]:
    """The exact window a confirm form carries (`start`, `end`: ISO 8601). Raises RangeError."""
    for name in ("start", "end"):
        if not (data.get(name) or "").strip():
            raise RangeError(name, "Required: the window the proposal was computed over.")
    window = parse_range({"range": "custom", "start": data["start"], "end": data["end"]})
    return window.start, window.end


@transaction.atomic
def confirm_window_proposal(
    *,
    service: Service,
    start: datetime,
    end: datetime,
    rule: str,
    hosts: list[str] | None = None,
    user=None,
) -> Bottleneck:
    """Re-run the rules over the window and record `rule`'s proposal as a confirmed Bottleneck."""
    found = window_diagnosis(service=service, start=start, end=end, hosts=hosts)
    proposal = next((p for p in found.proposals if p.rule == rule), None)
    if proposal is None:
        raise UnknownProposal(f"the rule {rule!r} proposes nothing over this window")
    # With what was not counted (an engine without a preemption counter), not what had no data.
    numbers = "; ".join(
        f"{n.label} {n.shown if n.shown is not None else n.missing}"
        for n in found.numbers
        if n.shown is not None or n.missing != "no data"
    )
    who = f" by {user.get_username()}" if getattr(user, "pk", None) else ""
    return services.bottleneck_record(
        service=service,
        title=proposal.title[:200],
        layer=proposal.layer,
        kind=proposal.kind,
        symptom=proposal.symptom,
        evidence=(
            f"{proposal.evidence}\n\nProposed by the diagnosis rule “{proposal.rule}” over "
            f"{found.describe_window()}; confirmed{who}.\nObserved: {numbers}."
        ),
        status=Bottleneck.Status.CONFIRMED,
        identified_on=timezone.localdate(),
    )
