"""A service's live economics: its token rate on its billing basis and the cost per Mtok and
margin over the live window, as the fleet's claims and the cost alert rules define them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from analysis import cost
from collectors.distributions import (
    Traffic,
)
from collectors.models import (
    MINUTE,
    GpuRollup,
    ServiceRollup,
)
from dossiers.models import Service


@dataclass(frozen=True)
class LiveEconomics:
    window_minutes: int
    tokens_per_second: float
    basis: str  # which tokens count: "output" or "total"
    economics: cost.Economics


def live_window_minutes() -> int:
    """The live window every page costs and checks claims over (the last N closed minutes)."""
    return int(getattr(settings, "PERFHUB_CLAIMS_WINDOW_MINUTES", 60))


def service_token_rate(traffic_by_host: Iterable[Traffic], basis: str) -> float | None:
    """A service's token rate on its billing basis: each host's rate over the time it reported,
    added over hosts (the same total `alerts.sources.service_windows` divides by the window).
    None when no host counted tokens."""
    total = None
    for traffic in traffic_by_host:
        gen = traffic.generation_tps
        if gen is None:
            continue
        rate = gen + (traffic.prompt_tps or 0.0) if basis == Service.TokenBasis.TOTAL else gen
        total = rate if total is None else total + rate
    return total


_TOKEN_COLUMNS = (
    "requests", "prompt_tokens", "output_tokens", "request_seconds", "scraped_requests",
    "scraped_prompt_tokens", "scraped_generation_tokens", "scraped_seconds",
)  # fmt: skip


def live_economics(
    *, service: Service, now: datetime | None = None, minutes: int | None = None
) -> LiveEconomics | None:
    """Cost per Mtok and margin over the live window, allocation basis, as the fleet's claims
    and the cost alert rules define them: totals over the window's closed minutes
    `[end - minutes, end)` (end: `now` floored to the minute), never a mean of per-minute rates.

    Token rate: `service_token_rate` over the window's minute roll-ups; GPU busy: GPU-Util
    weighted by samples over those hosts' minute rows. Costed against all the service's GPUs.
    None when nothing was measured. Two queries.
    """
    minutes = minutes or live_window_minutes()
    end = (now or timezone.now()).replace(second=0, microsecond=0)
    start = end - timedelta(minutes=minutes)
    per_host: dict[int, Traffic] = defaultdict(Traffic)
    rows = ServiceRollup.objects.filter(
        service=service, resolution_s=MINUTE, start__gte=start, start__lt=end
    ).values_list("host_id", *_TOKEN_COLUMNS)
    for host_id, *values in rows:
        traffic = per_host[host_id]
        for name, value in zip(_TOKEN_COLUMNS, values, strict=True):
            setattr(traffic, name, getattr(traffic, name) + value)
    tps = service_token_rate(per_host.values(), service.token_basis)
    if not tps or tps <= 0:
        return None
    busy = weight = 0.0
    for samples, util in GpuRollup.objects.filter(
        host_id__in=list(per_host), resolution_s=MINUTE, start__gte=start, start__lt=end
    ).values_list("samples", "util_mean"):
        if util is not None and samples:
            busy += util * samples
            weight += samples
    return LiveEconomics(
        window_minutes=minutes,
        tokens_per_second=tps,
        basis=service.token_basis,
        economics=service.economics(
            tokens_per_second=tps,
            gpus=service.total_gpus,
            busy_fraction=busy / weight if weight else None,
        ),
    )
