"""One verdict per service, right now: meeting its SLOs, burning budget, or breaching.

Read from the SLOs' standing over their windows (alerts.slo, from roll-ups) and the live
alerts. The rules, in order:
- breaching: an SLO certainly missed over its window (budget spent), or a firing alert of
  severity critical (a page);
- burning budget: a firing SLO or latency alert of any other severity, or an SLO spending its
  budget faster than it earns it over the last hour (certain burn above 1x);
- meeting SLOs: SLOs with requests in the last hour, none missed or burning, no such alert
  firing;
- otherwise "no SLO" or "no live data".
A firing SLO alert therefore never reads as fine. Pending alerts are listed, not judged: they
have not held long enough to mean anything yet. The baseline's claims are a separate line.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

from django.db.models import prefetch_related_objects

from alerts.models import AlertInstance, Severity
from alerts.slo import Reading, Standing, burn_pairs, standings
from dossiers.models import Service

SLO_KINDS = {"slo_burn", "p99_e2e", "p99_ttft", "p99_tpot"}


class Verdict(StrEnum):
    BREACHING = "breaching"
    BURNING = "burning budget"
    MEETING = "meeting SLOs"
    NO_SLO = "no SLO"
    NO_DATA = "no live data"

    @property
    def css(self) -> str:
        return {"breaching": "bad", "burning budget": "warn", "meeting SLOs": "ok"}.get(
            self.value, "none"
        )


@dataclass
class RightNow:
    service: Service
    verdict: Verdict
    reasons: list[str]
    standing: Standing
    firing: dict[str, list[AlertInstance]] = field(default_factory=dict)  # severity -> alerts
    pending: dict[str, list[AlertInstance]] = field(default_factory=dict)

    @property
    def firing_count(self) -> int:
        return sum(len(v) for v in self.firing.values())

    @property
    def pending_count(self) -> int:
        return sum(len(v) for v in self.pending.values())

    @property
    def rows(self) -> list[SloRow]:
        fast = burn_pairs()[0].name if burn_pairs() else None
        out = []
        for r in self.standing.readings:
            long = self.standing.burns.get((r.slo.key, fast), (None, None))[0] if fast else None
            out.append(
                SloRow(
                    r,
                    _share(r.budget.compliance, _pct),
                    _share(r.budget.budget_left, _pct),
                    _share(long.burn if long else None, _x),
                )
            )
        return out

    @property
    def by_severity(self) -> list[tuple[str, list[AlertInstance], list[AlertInstance]]]:
        """(severity, firing, pending), most severe first, only severities with alerts."""
        order = [Severity.CRITICAL, Severity.WARNING, Severity.INFO]
        return [
            (s.value, self.firing.get(s.value, []), self.pending.get(s.value, []))
            for s in order
            if self.firing.get(s.value) or self.pending.get(s.value)
        ]


def _share(pair: tuple[float, float] | None, fmt) -> str:
    """One figure, or its bounds when the count is not exact: "99.2%", "98.9 to 99.4%"."""
    if pair is None:
        return "—"
    lo, hi = (fmt(v) for v in pair)
    return lo if lo == hi else f"{lo} to {hi}"


def _pct(v: float) -> str:
    return f"{v * 100:.2f}%"


def _x(v: float) -> str:
    return f"{v:.1f}x"


@dataclass(frozen=True)
class SloRow:
    """One SLO as the page shows it."""

    reading: Reading
    compliance: str
    budget_left: str
    burn: str


def _judge(st: Standing, firing: list[AlertInstance]) -> tuple[Verdict, list[str]]:
    reasons: list[str] = []
    breaching = burning = False
    for a in firing:
        if a.rule.severity == Severity.CRITICAL:
            breaching = True
            reasons.append(f"{a.rule.name} firing ({a.rule.severity})")
        elif a.rule.kind in SLO_KINDS:
            burning = True
            reasons.append(f"{a.rule.name} firing ({a.rule.severity})")
    with_data = [r for r in st.readings if r.count.total]
    for r in with_data:
        if r.budget.met is False:
            breaching = True
            reasons.append(f"{r.slo.name}: missed over {r.slo.window_days} days")
    fast = burn_pairs()[0].name if burn_pairs() else None
    if fast:
        for (_key, pair), (long, _short) in st.burns.items():
            if pair == fast and long.burn and long.burn[0] > 1.0:
                burning = True
                reasons.append(
                    f"{long.slo.name}: spending budget at {long.burn[0]:.1f}x over the last hour"
                )
    if breaching:
        return Verdict.BREACHING, reasons
    if burning:
        return Verdict.BURNING, reasons
    if not st.readings:
        return Verdict.NO_SLO, reasons
    if not with_data:
        return Verdict.NO_DATA, reasons
    recent = [long for long, _short in st.burns.values() if long.count.total]
    if not recent:
        # Met over 28 days says nothing about now when nothing came in the last hour.
        return Verdict.NO_DATA, [*reasons, "no requests in the last hour"]
    return Verdict.MEETING, reasons


def right_now(services: list[Service], *, now: datetime) -> dict[int, RightNow]:
    """Each service's verdict: its SLOs' standing (a few queries for all of them) and its live
    alerts (one query)."""
    prefetch_related_objects(services, "slos")
    st = standings(services, now=now)
    live: dict[int, list[AlertInstance]] = defaultdict(list)
    for a in (
        AlertInstance.objects.live()
        .filter(service__in=services)
        .select_related("rule")
        .order_by("-fired_at", "-pending_since")
    ):
        live[a.service_id].append(a)
    out = {}
    for s in services:
        alerts = live.get(s.pk, [])
        firing = [a for a in alerts if a.state == "firing"]
        verdict, reasons = _judge(st[s.pk], firing)
        rn = out[s.pk] = RightNow(s, verdict, reasons, st[s.pk])
        for a in alerts:
            target = rn.firing if a.state == "firing" else rn.pending
            target.setdefault(a.rule.severity, []).append(a)
    return out
