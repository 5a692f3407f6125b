"""Latency: a request is good when it meets every threshold set (TTFT, TPOT, end-to-end)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError

from analysis import readable
from analysis import slo as slomath
from dossiers.slo_kinds import (
    ENGINE,
    PUSHED,
    THRESHOLD_FIELDS,
    Counted,
    SloKind,
    engine_source,
    register,
)

if TYPE_CHECKING:
    from analysis.slo import SloWindow
    from dossiers.models import Slo


@register
class Latency(SloKind):
    name = "latency"
    label = "latency (every threshold set is met)"
    fields = tuple(THRESHOLD_FIELDS)
    order = 10

    def clean(self, slo: Slo) -> None:
        if not slo.thresholds_ms:
            raise ValidationError(
                {
                    "ttft_ms": "A latency SLO needs at least one threshold "
                    "(TTFT, TPOT or end-to-end)."
                }
            )

    def describe(self, slo: Slo) -> str:
        return " and ".join(
            f"{THRESHOLD_FIELDS[f'{m}_ms']} ≤ {v:,.4g} ms" for m, v in slo.thresholds_ms.items()
        )

    def exact_key(self, slo: Slo) -> str | None:
        return slomath.objective_key(slo.thresholds_ms)

    def count(self, slo: Slo, w: SloWindow) -> Counted:
        exact = w.exact_joint(self.exact_key(slo))
        if exact is not None and exact[0]:
            # Every pushed request tested against every threshold when it was rolled up.
            return Counted(slomath.Count(exact[0], exact[1], exact[1]), PUSHED)
        per_metric, sources, notes = [], set(), []
        for metric, threshold_ms in slo.thresholds_ms.items():
            sketch, bc = w.sketches.get(metric), w.buckets.get(metric)
            label = THRESHOLD_FIELDS[f"{metric}_ms"]
            if sketch is not None and sketch.count:
                c = slomath.good_from_sketch(sketch, threshold_ms)
                sources.add(PUSHED)
                if not c.exact:
                    shown = readable.setting(threshold_ms)
                    notes.append(f"{label} ≤ {shown} ms: within the sketch's 1% bins")
            elif bc is not None and bc.count:
                c = slomath.good_from_buckets(bc, threshold_ms / 1000.0)
                sources.add(engine_source(ENGINE, slo, (f"{metric}_seconds",)))
                if not c.exact:
                    notes.append(_between_edges(label, threshold_ms, bc.edges))
            else:
                notes.append(f"no {label} measurements")
                continue
            per_metric.append(c)
        if len(per_metric) > 1:
            what = "distribution" if sources == {PUSHED} else "histogram"
            notes.append(f"each threshold counted on its own {what}: the joint share is bounded")
        return Counted(slomath.joint(per_metric), " and ".join(sorted(sources)), tuple(notes))


def _between_edges(label: str, threshold_ms: float, edges: tuple[float, ...]) -> str:
    t = threshold_ms / 1000.0
    below = [e for e in edges if e < t]
    above = [e for e in edges if e > t]
    lo = f"{readable.setting(below[-1] * 1000)} ms" if below else "0"
    hi = f"{readable.setting(above[0] * 1000)} ms" if above else "+Inf"
    return (
        f"{label} ≤ {readable.setting(threshold_ms)} ms lies between bucket edges {lo} and {hi}: "
        "the requests in that bucket are counted as unknown (bounds), not rounded"
    )
