"""SLO standing from roll-ups: counts, compliance, budget left and burn rate per SLO.

One place turns a service's `SloWindow` (alerts.sources) into `analysis.slo` counts (each SLO
kind counts its own: `dossiers.slo_kinds`), so the burn-rate rule kind, the dossier's
right-now verdict and the fleet row say the same figures. Each reading says where its counts
were measured (engine histograms: server-side, from arrival at the engine; pushed requests: as
the agent saw them) and whether the count is exact.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings

from alerts.slo_windows import SloWindow, slo_windows
from analysis import slo as slomath
from dossiers import slo_kinds
from dossiers.models import Service, Slo


def burn_pairs() -> list[slomath.BurnPair]:
    """The multi-window pairs (settings.PERFHUB_SLO_BURN_PAIRS; default the SRE workbook's
    three and the outage pair, `analysis.slo.DEFAULT_PAIRS`). The first is the "fast" one the
    pages show as the last hour's burn."""
    raw = getattr(settings, "PERFHUB_SLO_BURN_PAIRS", None)
    if not raw:
        return list(slomath.DEFAULT_PAIRS)
    return [
        slomath.BurnPair(
            name=p["name"],
            factor=float(p["factor"]),
            long_s=int(p["long_s"]),
            short_s=int(p.get("short_s") or max(60, int(p["long_s"]) // 12)),
            severity=p.get("severity", "critical"),
        )
        for p in raw
    ]


@dataclass(frozen=True)
class Reading:
    """One SLO over one window."""

    slo: Slo
    window_s: int
    budget: slomath.Budget
    source: str  # where measured ("" without requests)
    notes: tuple[str, ...] = ()  # why the count is bounded, what is missing
    first_data_s: float | None = None  # seconds from the window's first roll-up row to its end

    @property
    def count(self) -> slomath.Count:
        return self.budget.count

    @property
    def exact(self) -> bool:
        return self.count.exact

    @property
    def burn(self) -> tuple[float, float] | None:
        return self.budget.burn_rate

    @property
    def goodput(self) -> tuple[float, float] | None:
        """Good requests per second (low, high) over the window."""
        if not self.count.total:
            return None
        return self.count.good_low / self.window_s, self.count.good_high / self.window_s


def count(slo: Slo, w: SloWindow | None) -> tuple[slomath.Count, str, tuple[str, ...]]:
    """(count, where measured, notes) of one SLO in one window of roll-ups: the SLO's kind
    counts (`dossiers.slo_kinds`)."""
    if w is None:
        return slomath.NONE, "", ("no roll-up rows in the window",)
    spec = slo.kind_spec
    if spec is None:
        return slomath.NONE, "", (f"unknown SLO kind {slo.kind!r} (no module registers it)",)
    return spec.count(slo, w)


def reading(slo: Slo, w: SloWindow | None, window_s: int, end: datetime | None = None) -> Reading:
    c, source, notes = count(slo, w)
    first = None
    if w is not None and w.first_start is not None and end is not None:
        first = (end - w.first_start).total_seconds()
    return Reading(slo, window_s, slomath.Budget(slo.target, c), source, notes, first)


def read_windows(
    service_ids: list[int],
    end: datetime,
    windows_s: set[int],
    slos: dict[int, list[Slo]] | None = None,
) -> dict[int, dict[int, SloWindow]]:
    """window_s -> service id -> SloWindow ending at `end`. With the services' SLOs, the
    distributions are read only for a service some kind's count needs them for: a kind that
    reads none (`reads_distributions`), or one whose exact joint count (`exact_key`) every
    window has, does not."""
    exact_keys = None
    if slos is not None:
        exact_keys = {}
        for sid, objs in slos.items():
            keys: set[str] | None = set()
            for o in objs:
                kind = slo_kinds.get(o.kind)
                if kind is None or not kind.reads_distributions:
                    continue
                key = kind.exact_key(o)
                if key is None:
                    keys = None  # this kind always counts on the distributions
                    break
                keys.add(key)
            if keys is not None:
                exact_keys[sid] = keys
    return slo_windows(service_ids, end, windows_s, exact_keys=exact_keys)


@dataclass
class Standing:
    """A service's SLOs over their own windows, and the fast pair's burn (long, short)."""

    service: Service
    end: datetime | None = None  # the windows end here (now minus the evaluation lag)
    readings: list[Reading] = field(default_factory=list)
    burns: dict[tuple[str, str], tuple[Reading, Reading]] = field(default_factory=dict)

    @property
    def has_slos(self) -> bool:
        return bool(self.readings)


def standings(services: list[Service], *, now: datetime) -> dict[int, Standing]:
    """Each service's SLO readings over each SLO's window and the fast pair's two windows,
    ending at the evaluation's window end (now minus the evaluation lag, so the figures match
    the alerts'). Reads all the windows at once for all the services."""
    lag = timedelta(seconds=getattr(settings, "PERFHUB_ALERTS_EVALUATION_LAG_S", 120))
    end = now.replace(second=0, microsecond=0) - lag
    slos = {s.pk: s.slo_objects() for s in services}
    windows = {o.window_days * 86400 for objs in slos.values() for o in objs}
    # The fast pair only: the page shows the last hour's burn; the other pairs speak through
    # their alerts (and reading three days for every service of a fleet page costs).
    pairs = burn_pairs()[:1]
    windows |= {p.long_s for p in pairs} | {p.short_s for p in pairs}
    ids = [s.pk for s in services if slos[s.pk]]
    read = read_windows(ids, end, windows, slos) if ids else {}
    out: dict[int, Standing] = {}
    for service in services:
        st = out[service.pk] = Standing(service, end)
        for o in slos[service.pk]:
            span = o.window_days * 86400
            st.readings.append(reading(o, read.get(span, {}).get(service.pk), span))
            for p in pairs:
                long = reading(o, read[p.long_s].get(service.pk), p.long_s, end)
                short = reading(o, read[p.short_s].get(service.pk), p.short_s, end)
                st.burns[(o.key, p.name)] = (long, short)
    return out
