"""Every number a dossier claims, checked against live roll-ups at an equal workload.

A claim is a figure of the current baseline (P50/P90/P99 end-to-end, TTFT and TPOT, output
throughput per replica, GPU busy, cost per Mtok, margin). Each is compared with the same figure
over the last live window (`PERFHUB_CLAIMS_WINDOW_MINUTES`, merged over the service's hosts from
1-minute roll-ups, never averaged), but only when the live workload matches the baseline's:
the request rate per replica, and the mean prompt and output tokens per request, each within
the band the figure needs (`WORKLOAD_BANDS`). A P99 measured at 8 req/s says nothing at
2 req/s, and output tokens/s rise with longer answers whatever the service does; so a live
window outside the band says "workload changed: output tokens per request +27%" and gives no
verdict. Live cost and margin at whatever the load is are shown beside, labelled as such.

Batched: one call for the whole fleet reads the roll-ups of every service in three queries.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from alerts.sources import ServiceWindow, service_windows
from analysis import claims
from analysis.claims import Status, Verdict, Workload, WorkloadMatch
from analysis.cost import Economics
from analysis.percentiles import LATENCY_LABELS, LATENCY_METRICS, minimum_count
from analysis.percentiles import label as label_of
from collectors.exposition.engines import measured_by
from collectors.models import HOUR
from collectors.selectors import gpu_source_of_hosts, service_metrics
from dossiers.models import Baseline, Service
from dossiers.services import baseline_record
from dossiers.slo_kinds import PUSHED

# The engine's counters an error rate divides: errors over requests finished in any way.
OUTCOME_CANONICALS = ("request_errors", "requests_finished", "request_aborts")

CLAIM_QUANTILES = {"p50": 0.5, "p90": 0.9, "p99": 0.99}

# Which workload figures each kind of claim depends on, and how far each may stray. An
# end-to-end latency grows with both lengths, a first token with the prompt's, a decode step
# with neither (only the batch, that is the rate); throughput, cost, margin and GPU busy with
# all three, in the narrow band of `analysis.claims.RESOURCE_BAND`.
_TOKENS = claims.TOKENS_BAND
WORKLOAD_BANDS: dict[str, dict[str, float]] = {
    "e2e": {"rate": claims.LOAD_BAND, "prompt_tokens": _TOKENS, "output_tokens": _TOKENS},
    "ttft": {"rate": claims.LOAD_BAND, "prompt_tokens": _TOKENS},
    "tpot": {"rate": claims.LOAD_BAND},
    "resource": dict.fromkeys(("rate", "prompt_tokens", "output_tokens"), claims.RESOURCE_BAND),
}


def window_minutes() -> int:
    return int(getattr(settings, "PERFHUB_CLAIMS_WINDOW_MINUTES", 60))


def stale_after() -> timedelta:
    return timedelta(days=int(getattr(settings, "PERFHUB_BASELINE_STALE_DAYS", 90)))


@dataclass(frozen=True)
class Claim:
    key: str  # e.g. "e2e_p99_ms", "output_tps", "cost_per_mtok"
    label: str
    unit: str  # "ms", "tok/s", "ratio", "money"
    baseline: float | None
    live: float | None
    verdict: Verdict
    note: str = ""  # why there is no verdict (insufficient requests, load out of band)
    since: str = ""  # a drifted claim: since when (see `drift_since`)

    @property
    def status(self) -> Status:
        return self.verdict.status


@dataclass
class ClaimCheck:
    """One service's claims against one live window."""

    service: Service
    baseline: Baseline | None
    start: datetime
    end: datetime
    claims: list[Claim] = field(default_factory=list)
    live_rate: float | None = None  # requests/s per replica, over the window
    baseline_rate: float | None = None
    comparable: bool | None = None  # the live rate within the latency claims' band
    live_workload: Workload | None = None
    baseline_workload: Workload | None = None
    stale: bool = False
    live_economics: Economics | None = None  # at the live load, whatever it is
    requests: int = 0
    data_seconds: float = 0.0  # the seconds of the window that have data (rates are over them)
    error_rate: float | None = None  # errored over finished requests in the window
    error_source: str = ""  # where `error_rate` was counted, for this service's engine

    @property
    def status(self) -> Status:
        if self.baseline is None:
            return Status.NO_CLAIM
        return claims.worst([c.status for c in self.claims])

    @property
    def drifted(self) -> list[Claim]:
        return [c for c in self.claims if c.status == Status.DRIFTED]

    def workload(self, kind: str) -> WorkloadMatch | None:
        """The live workload against the baseline's for one kind of claim (WORKLOAD_BANDS)."""
        if self.live_workload is None or self.baseline_workload is None:
            return None
        return claims.compare_workload(
            self.baseline_workload, self.live_workload, WORKLOAD_BANDS[kind]
        )

    @property
    def workload_note(self) -> str:
        """The widest statement that holds: what changed for the throughput, cost and margin
        claims (the narrowest band), e.g. "workload changed: output tokens per request +27%"."""
        match = self.workload("resource")
        return match.note if match is not None else ""

    def claim(self, key: str) -> Claim | None:
        return next((c for c in self.claims if c.key == key), None)

    @property
    def span(self) -> str:
        """The window in words, from its own start and end: "last 60 min" for the default
        (`window_minutes()`), else its dates."""
        minutes = round((self.end - self.start).total_seconds() / 60)
        if self.end < timezone.now() - timedelta(minutes=2):
            return f"{self.start:%Y-%m-%d %H:%M} to {self.end:%H:%M} UTC ({minutes} min)"
        return f"last {minutes} min"

    @property
    def live_label(self) -> str:
        """What stands next to each live figure, e.g. "live, last 60 min": another page's
        live figures may be over another window (the fleet dashboard's range)."""
        return f"live, {self.span}"

    @property
    def window_label(self) -> str:
        span = self.span
        if self.data_seconds and self.data_seconds < (self.end - self.start).total_seconds():
            return f"{span}; rates over the {self.data_seconds:,.0f} s with traffic"
        return span

    @property
    def load_note(self) -> str:
        if self.live_rate is None:
            return "no live traffic in the window"
        live = f"{self.live_rate:.2f} req/s per replica"
        if self.baseline_rate is None:
            return f"live {live}; the baseline records no request rate to compare with"
        band = f"±{claims.LOAD_BAND:.0%} of the baseline's {self.baseline_rate:.2f} req/s"
        where = "within" if self.comparable else "outside"
        return f"live {live}, {where} {band} ({self.requests:,} requests)"

    @property
    def window_url(self) -> str:
        query = urlencode({"start": self.start.isoformat(), "end": self.end.isoformat()})
        return reverse("dashboards:service", args=[self.service.slug]) + "?" + query


def check_claims(
    services: list[Service],
    baselines: dict[int, Baseline | None],
    *,
    now: datetime | None = None,
    start: datetime | None = None,
    end: datetime | None = None,
) -> dict[int, ClaimCheck]:
    """The claim check of every service (its current baseline given in `baselines`), over
    the range the user picked (`start`, `end`) or else the last closed live window. Every
    figure of one check is read over that one window."""
    now = now or timezone.now()
    if start is None or end is None:
        end = now.replace(second=0, microsecond=0)
        start = end - timedelta(minutes=window_minutes())
    windows = service_windows(
        [s.pk for s in services], start, end, quantiles=tuple(CLAIM_QUANTILES.values())
    )
    return {
        s.pk: _check(s, baselines.get(s.pk), windows.get(s.pk), start, end, now) for s in services
    }


def outcome_source(engine: str, sources: set[str]) -> str:
    """Where a window's error rate was counted, named for the service's engine (its own
    metrics, from the mapping tables), and the pushed requests where hosts pushed them."""
    said = []
    if "engine" in sources:
        said.append(measured_by(engine, OUTCOME_CANONICALS) or f"the {engine} engine's counters")
    if "pushed" in sources:
        said.append(PUSHED)
    return " and ".join(said)


def _check(
    service: Service,
    baseline: Baseline | None,
    w: ServiceWindow | None,
    start: datetime,
    end: datetime,
    now: datetime,
) -> ClaimCheck:
    check = ClaimCheck(service=service, baseline=baseline, start=start, end=end)
    replicas = max(service.replicas, 1)
    if w is not None and w.seconds:
        check.requests = round(w.requests)
        check.data_seconds = w.data_seconds
        check.error_rate = w.error_rate
        check.error_source = outcome_source(service.engine, w.outcome_sources)
        check.live_rate = w.qps / replicas if w.qps is not None else None
        if (lengths := w.tokens_per_request()) is not None:
            # The request rate on the one time base of every live rate (the seconds with
            # traffic, as a load test measures it); without those, over the time the hosts
            # reported (a gap, an agent starting, is not a lull).
            rate = w.qps if w.qps is not None else w.covered_rate
            check.live_workload = Workload(rate / replicas, *lengths)
        tps = w.tokens_per_second(service.token_basis)
        check.live_economics = service.economics(
            tokens_per_second=tps, gpus=service.total_gpus, busy_fraction=w.gpu_util
        )
    if baseline is None:
        return check
    check.baseline_rate = baseline.qps
    check.baseline_workload = baseline_workload(baseline)
    check.comparable = claims.comparable_load(baseline.qps, check.live_rate)
    check.stale = claims.is_stale(baseline.measured_at, now, stale_after())
    check.claims = _latency_claims(check, baseline, w) + _resource_claims(check, baseline, w)
    return check


def baseline_workload(b: Baseline) -> Workload:
    """The workload a baseline was measured at: its rate per replica and tokens per request
    (the recorded means, else throughput over rate)."""

    def per_request(mean: float | None, tps: float | None) -> float | None:
        if mean:
            return mean
        return tps / b.qps if tps and b.qps else None

    return Workload(
        b.qps,
        per_request(b.prompt_tokens_mean, b.input_tps),
        per_request(b.output_tokens_mean, b.output_tps),
    )


def _gate(check: ClaimCheck, w: ServiceWindow | None, kind: str) -> tuple[Status, str] | None:
    """Why no live figure of this kind of claim can be judged, if so."""
    if check.stale:
        return Status.STALE, f"baseline measured {check.baseline.measured_at:%Y-%m-%d}"
    if w is None or not check.requests:
        return Status.NO_LIVE_DATA, "no live traffic in the window"
    if check.comparable is None:
        return Status.NOT_COMPARABLE, "the baseline records no request rate"
    match = check.workload(kind)
    if match.shifts:
        return Status.WORKLOAD_CHANGED, match.note
    # A latency claim on a baseline without token counts keeps the rate check alone (older
    # baselines); throughput, cost and margin mean nothing without the tokens.
    if match.unknown and kind == "resource":
        return Status.NOT_COMPARABLE, match.note
    return None


def _latency_claims(check: ClaimCheck, b: Baseline, w: ServiceWindow | None) -> list[Claim]:
    out = []
    for metric in LATENCY_METRICS:
        gate = _gate(check, w, metric)
        for label, q in CLAIM_QUANTILES.items():
            key, name = f"{metric}_{label}_ms", f"{LATENCY_LABELS[metric]} {label.upper()}"
            claimed = getattr(b, key)
            if claimed is not None:
                out.append(_latency_claim(key, name, claimed, q, gate, w, metric, b))
    return out


def _paired(
    b: Baseline, key: str, claimed: float, live_vantage: str
) -> tuple[float | tuple[float, float] | None, str]:
    """The baseline's figure measured where the live one was (like with like), and a note.

    A client-side baseline (a load-test file) compared with live engine histograms uses the
    engine's figures of the baseline's own run when they were recorded (`server_side`);
    otherwise there is nothing like-for-like to compare, and the claim says so."""
    if b.vantage == live_vantage:
        return claimed, ""
    if live_vantage == "server":
        figure = (b.server_side or {}).get("figures", {}).get(key) or {}
        if figure.get("value") is not None:
            return figure["value"], (
                f"against the baseline run's engine-side figure ({figure['value']:,.0f} ms; "
                f"client-side {claimed:,.0f} ms)"
            )
        if (bucket := _engine_bucket(figure)) is not None:
            # Known only within a bucket of the engine's histogram ("< 300 ms", "> 60 s"):
            # compared as an interval with the live one, never as a value invented inside it.
            return bucket, (
                f"against the baseline run's engine-side figure ({_interval_text(bucket)}; "
                f"client-side {claimed:,.0f} ms)"
            )
        return None, (
            "live figures are the engine's (server-side, from arrival at the engine); the "
            "baseline's are client-side and no engine-side figure was recorded for its run"
        )
    return None, "live figures are client-side; the baseline's are the engine's (server-side)"


def _engine_bucket(figure: dict) -> tuple[float, float] | None:
    """The bucket an engine-side figure without a value lies in: [lower, upper], or above the
    histogram's last finite edge."""
    if figure.get("lower") is not None and figure.get("upper") is not None:
        return figure["lower"], figure["upper"]
    if figure.get("above_last_edge") is not None:
        return figure["above_last_edge"], math.inf
    return None


def _interval_text(bucket: tuple[float, float]) -> str:
    lower, upper = bucket
    if math.isinf(upper):
        return f"> {lower:,.0f} ms"
    return f"< {upper:,.0f} ms" if lower == 0 else f"{lower:,.0f} to {upper:,.0f} ms"


def _live_interval(p) -> tuple[float, float]:
    """Where a live percentile lies: its value, or its bucket ("< edge" is [0, edge]; a value
    interpolated inside a wide bucket is only an estimate: the bucket)."""
    if p.wide_bucket:
        return p.lower, p.upper
    if p.value is not None:
        return p.value, p.value
    if p.below_first_edge is not None:
        return 0.0, p.below_first_edge
    return p.above_last_edge, float("inf")


def _latency_claim(key, name, claimed, q, gate, w, metric, b) -> Claim:
    if gate:
        return Claim(key, name, "ms", claimed, None, Verdict(gate[0]), gate[1])
    p = w.percentiles.get(metric, {}).get(q)
    if p is None or p.count == 0 or p.bound is None:
        return Claim(key, name, "ms", claimed, None, Verdict(Status.NO_LIVE_DATA))
    name = f"{name} ({p.vantage})"
    reference, note = _paired(b, key, claimed, p.vantage)
    if reference is None:
        return Claim(key, name, "ms", claimed, p.bound, Verdict(Status.NOT_COMPARABLE), note)
    need = minimum_count(q)
    if p.count < need:
        note = f"{p.count:,} live requests; this percentile needs {need:,}"
        return Claim(key, name, "ms", claimed, p.bound, Verdict(Status.INSUFFICIENT), note)
    if isinstance(reference, tuple):  # the baseline's engine-side figure is a bucket
        lower, upper = _live_interval(p)
        verdict = claims.judge_intervals(reference[0], reference[1], lower, upper)
        return Claim(key, name, "ms", claimed, p.bound, verdict, f"live {p.text()}. {note}".strip())
    if p.value is None or p.wide_bucket:  # known only within a bucket: "< edge", "> edge"
        lower, upper = _live_interval(p)
        verdict = claims.judge_within(reference, lower, upper)
        return Claim(key, name, "ms", claimed, p.bound, verdict, f"live {p.text()}. {note}".strip())
    return Claim(key, name, "ms", claimed, p.value, claims.judge(reference, p.value), note)


def _resource_claims(check: ClaimCheck, b: Baseline, w: ServiceWindow | None) -> list[Claim]:
    gate = _gate(check, w, "resource")
    service = check.service
    live = None if gate else w
    base_econ = b.economics(service)
    # The claimed cost is at the baseline's throughput: judged at the live throughput over the
    # same seconds as every other figure of the check (those with traffic). The cost with idle
    # time counted is shown apart ("at the live load, whatever it is").
    live_econ = None
    if not gate:
        busy_tps = w.busy_tokens_per_second(service.token_basis)
        live_econ = service.economics(
            tokens_per_second=busy_tps, gpus=service.total_gpus, busy_fraction=w.gpu_util
        ) if busy_tps else None  # fmt: skip
    rows = [
        ("output_tps", "Output tokens/s per replica", "tok/s", b.output_tps,
         _per_replica(live.busy_tokens_per_second("output"), service) if live else None, True),
        ("gpu_util", "GPU busy", "ratio", b.gpu_util, live.gpu_util if live else None, False),
        ("cost_per_mtok", f"Cost per Mtok ({service.currency})", "money",
         base_econ.cost_per_mtok if base_econ else None,
         live_econ.cost_per_mtok if live_econ else None, True),
        ("margin", "Margin", "ratio", base_econ.margin if base_econ else None,
         live_econ.margin if live_econ else None, False),
    ]  # fmt: skip
    out = []
    for key, label, unit, claimed, value, relative in rows:
        if claimed is None:
            continue
        if gate:
            verdict, note = Verdict(gate[0]), gate[1]
        else:
            verdict, note = claims.judge(claimed, value, relative=relative), ""
        out.append(Claim(key, label, unit, claimed, value, verdict, note))
    return out


def _per_replica(value: float | None, service: Service) -> float | None:
    return None if value is None else value / max(service.replicas, 1)


LIVE_BASELINE_QUANTILES = (0.5, 0.9, 0.95, 0.99, 0.999)


def record_live_baseline(*, service: Service, user=None, now: datetime | None = None):
    """The last live window as a baseline candidate (not current), or None without traffic.

    Percentiles come from the window's merged distributions; each is kept only when it rests on
    enough requests (the one minimum-count rule), so a thin window cannot claim a P999.
    """
    now = now or timezone.now()
    end = now.replace(second=0, microsecond=0)
    start = end - timedelta(minutes=window_minutes())
    w = service_windows([service.pk], start, end, quantiles=LIVE_BASELINE_QUANTILES).get(service.pk)
    if w is None or not w.requests:
        return None
    replicas = max(service.replicas, 1)
    # One vantage per baseline: the live window's figures come from request rows (client)
    # or engine histograms (server); e2e decides, and figures of the other side are left out.
    vantage = next(
        (p.vantage for m in ("e2e", "ttft", "tpot") for p in w.percentiles.get(m, {}).values()
         if p.count and p.vantage),
        "client",
    )  # fmt: skip
    fields = {
        "measured_at": end,
        "duration_s": w.data_seconds or w.seconds,
        "request_count": round(w.requests),
        "qps": (w.qps or 0.0) / replicas,
        "output_tps": (w.busy_output_tps or 0.0) / replicas,
        "input_tps": (w.busy_prompt_tps or 0.0) / replicas,
        "vantage": vantage,
        "gpu_util": w.gpu_util,
        "sm_active": w.sm_active,
        "gpu_source": gpu_source_of_hosts(w.host_ids) if w.gpu_util is not None else "",
    }
    for metric, by_q in w.percentiles.items():
        if metric not in LATENCY_METRICS:  # ITL and the engine layers have no baseline column
            continue
        for q, p in by_q.items():
            if p.value is not None and p.count >= minimum_count(q) and p.vantage == vantage:
                fields[f"{metric}_{label_of(q)}_ms"] = p.value
    notes = (
        f"Recorded from live traffic {start:%Y-%m-%d %H:%M} to {end:%H:%M} UTC over "
        f"{len(w.host_ids)} host(s), {round(w.requests):,} requests; figures per replica."
    )
    return baseline_record(
        service=service,
        label=f"Live {end:%Y-%m-%d %H:%M} UTC",
        notes=notes,
        created_by=user if getattr(user, "pk", None) else None,
        **fields,
    )


def drift_since(check: ClaimCheck, *, lookback_hours: int = 72) -> None:
    """When each drifted latency claim started drifting: walk back over hourly roll-ups (one
    read of the service's merged hourly series) to the newest hour in which the claim held at
    comparable load; the drift started the hour after. Fills each drifted claim's `since`."""
    drifted = [c for c in check.drifted if c.unit == "ms"]
    if not drifted or check.baseline is None:
        return
    start = check.start.replace(minute=0) - timedelta(hours=lookback_hours)
    series = service_metrics(
        service=check.service, start=start, end=check.start, resolution=HOUR
    ).points
    replicas = max(check.service.replicas, 1)
    for index, claim in enumerate(check.claims):
        if claim not in drifted:
            continue
        metric, label, _ = claim.key.split("_")
        q = CLAIM_QUANTILES[label]
        since = check.start
        for point in reversed(series):
            p = next((p for p in point.latency.get(metric, []) if p.q == q), None)
            rate = point.qps / replicas if point.qps is not None else None
            if p is None or p.value is None or p.count < minimum_count(q):
                continue
            if claims.comparable_load(check.baseline_rate, rate) is False:
                continue
            reference, _ = _paired(check.baseline, claim.key, claim.baseline, p.vantage)
            if reference is None:  # measured elsewhere: says nothing about this claim
                continue
            verdict = (
                claims.judge_intervals(*reference, p.value, p.value)
                if isinstance(reference, tuple)
                else claims.judge(reference, p.value)
            )
            if verdict.status == Status.HOLDS:
                break
            since = point.t
        else:
            since = None  # drifted as far back as we looked
        text = (
            f"since {since:%Y-%m-%d %H:%M} UTC"
            if since is not None
            else f"for more than {lookback_hours} h"
        )
        check.claims[index] = replace(claim, since=text)
