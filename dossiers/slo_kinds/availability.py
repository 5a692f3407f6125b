"""Availability: a request is good when it did not fail."""

from __future__ import annotations

from typing import TYPE_CHECKING

from analysis import slo as slomath
from dossiers.slo_kinds import ENGINE_COUNTERS, PUSHED, Counted, SloKind, engine_source, register

if TYPE_CHECKING:
    from analysis.slo import SloWindow
    from dossiers.models import Slo


@register
class Availability(SloKind):
    name = "availability"
    label = "availability (the request did not fail)"
    order = 20
    reads_distributions = False

    def describe(self, slo: Slo) -> str:
        return "no error"

    def count(self, slo: Slo, w: SloWindow) -> Counted:
        if w.requests:
            good = w.requests - w.errors
            return Counted(slomath.Count(w.requests, good, good), PUSHED)
        # The engine's own counters: successes and errors (named per engine); aborts (the
        # client went away) are neither good nor bad for the service.
        good, failed = round(w.scraped_requests), round(w.scraped_errors)
        if good + failed:
            source = engine_source(ENGINE_COUNTERS, slo, ("requests_finished", "request_errors"))
            return Counted(slomath.Count(good + failed, good, good), source)
        return Counted(slomath.NONE, notes=("no finished requests in the window",))
