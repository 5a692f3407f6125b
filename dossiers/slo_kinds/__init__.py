"""SLO kinds: what makes a request good for an SLO. One class per kind, one module each in this
folder (`latency`, `availability`, and any module added here: the package imports every
module in its folder, `core.discovery`). `Slo.kind` stores the name; the model's choices and
validation, the SLO's description, and the counts every reader of an SLO's standing uses (the
burn-rate alerts, the dossier's right-now verdict, the fleet row: `alerts.slo.count`) ask this
registry.

A kind says which of the SLO's thresholds it reads (`fields`; the others must be left blank),
what else a valid SLO of it needs (`clean`), how it reads to a person (`describe`), and how many
requests of a window of roll-ups (`analysis.slo.SloWindow`, as `alerts.sources` reads it) were
good (`count`). `docs/extending.md` walks through one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar, NamedTuple

from django.core.exceptions import ValidationError

from analysis import slo as slomath
from core.discovery import import_submodules
from core.registry import Registry

if TYPE_CHECKING:
    from analysis.slo import SloWindow
    from dossiers.models import Slo

# Where a count was measured, as a reading shows it.
ENGINE = "engine histograms (server-side, from arrival at the engine)"
PUSHED = "pushed requests (per request, as the agent measured them)"
ENGINE_COUNTERS = "engine counters (server-side: requests finished, with an error or not)"


# The engine's own metrics a count read, named from the engine mapping tables (which sit in
# collectors, above dossiers: collectors tells this module, `use_engine_metrics`).
def _no_engine_metrics(engine: str, canonicals: tuple[str, ...]) -> str:
    return ""


_engine_metrics: Callable[[str, tuple[str, ...]], str] = _no_engine_metrics


def use_engine_metrics(source: Callable[[str, tuple[str, ...]], str]) -> None:
    global _engine_metrics
    _engine_metrics = source


def engine_source(generic: str, slo: Slo, canonicals: tuple[str, ...]) -> str:
    """`generic` (ENGINE, ENGINE_COUNTERS) with the service's engine's own metrics named:
    a TGI service's SLO says tgi_request_failure, never vLLM's finished_reason."""
    named = _engine_metrics(slo.service.engine, canonicals)
    return f"{generic}: {named}" if named else generic


# The SLO's threshold fields (Slo.ttft_ms, ...) and how a person names each.
THRESHOLD_FIELDS = {"ttft_ms": "TTFT", "tpot_ms": "TPOT", "e2e_ms": "end-to-end"}


class Counted(NamedTuple):
    """One SLO's count over one window, where it was measured ("" without requests) and why
    it is bounded or what is missing."""

    count: slomath.Count
    source: str = ""
    notes: tuple[str, ...] = ()


class SloKind:
    """What makes a request good for one kind of SLO. Subclass, set the class attributes,
    `@register`."""

    name: ClassVar[str]  # stored in Slo.kind
    label: ClassVar[str]  # the form's choice
    fields: ClassVar[tuple[str, ...]] = ()  # the threshold fields it reads (THRESHOLD_FIELDS)
    order: ClassVar[int] = 100  # place among the form's choices (the built-ins take 10, 20)
    # Whether `count` reads the window's latency distributions (sketches, bucket deltas):
    # reading them is most of an SLO read, so a kind that never does says so.
    reads_distributions: ClassVar[bool] = True

    def clean(self, slo: Slo) -> None:
        """ValidationError naming the field when an SLO of this kind is incomplete (the
        thresholds it does not read are already refused)."""

    def describe(self, slo: Slo) -> str:
        """What a good request is, as the dossier says it before "for 99% of requests over
        28 days"."""
        raise NotImplementedError

    def count(self, slo: Slo, w: SloWindow) -> Counted:
        """The good requests among those of `w`, the service's roll-ups over one window."""
        raise NotImplementedError

    def exact_key(self, slo: Slo) -> str | None:
        """The key of the exact joint count (`SloWindow.exact_joint`) that `count` takes
        instead of the distributions when every row of a window kept it; None when `count`
        always reads the distributions."""
        return None

    def validate(self, slo: Slo) -> None:
        """The thresholds the kind does not read must be blank; then the kind's own `clean`."""
        unread = [
            f for f in THRESHOLD_FIELDS if f not in self.fields and getattr(slo, f) is not None
        ]
        if unread:
            article = "An" if self.name[0] in "aeiou" else "A"
            if self.fields:
                reads = " and ".join(THRESHOLD_FIELDS[f] for f in self.fields)
                why = f"reads only its {reads} threshold: leave this one blank."
            else:
                why = "has no latency threshold: leave it blank."
            raise ValidationError({unread[0]: f"{article} {self.name} SLO {why}"})
        self.clean(slo)


KINDS: Registry[SloKind] = Registry("SLO kind")
register = KINDS.register  # class decorator: `@register class MyKind(SloKind)`
unregister = KINDS.unregister


def ordered() -> list[SloKind]:
    """Every kind in its `order` (ties by name)."""
    return sorted(KINDS.values(), key=lambda k: (k.order, k.name))


def kind_choices() -> list[tuple[str, str]]:
    """The model field's choices, in the kinds' `order` (a function: migrations name it)."""
    return [(k.name, k.label) for k in ordered()]


def get(name: str) -> SloKind | None:
    """The kind named `name`; None for a stored kind no module registers any more."""
    return KINDS.get(name)


import_submodules(__name__)
