"""Which measured change an experiment's one-line summary leads with.

An experiment is about one figure: the target its author states (any of `TARGETS`, a latency
percentile or a throughput or utilization figure), else the latency figure its hypothesis names
("... cutting TTFT P99"). The card's headline shows that figure's change, not a fixed one, so a
change aimed at TTFT is not summed up by E2E P99, and says where the target came from. Without
either, the headline keeps the default (E2E P99, the tail an SLO sees) and says it is the
default: there is no principled mapping from the variable changed to the figure it should
move, so none is guessed. A target the two baselines did not both measure cannot lead: the
default does, and the headline keeps the target it could not show.

A percentile resting on too few requests is no result: the release gate does not judge a
quantile with fewer than `TAIL_REQUESTS` requests beyond it on either side, and the headline
does not show one either. It falls back to the next lower percentile of the same figure that
has enough (P99 -> P95 -> P90 -> P50) and says which percentile it replaced.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from analysis.cost import MetricDelta
from analysis.gate.estimates import TAIL_REQUESTS
from analysis.percentiles import (
    LATENCY_FIELDS,
    LATENCY_METRICS,
    PERCENTILE_LABELS,
    QUANTILE_OF,
    latency_field,
)

# Without a target: the tail first (what an SLO sees), then throughput, whichever was measured.
DEFAULT_ORDER = ("e2e_p99_ms", "ttft_p99_ms", "tpot_p99_ms", "output_tps", "qps", "gpu_util")
# What an experiment may state as its target: any latency percentile, or a throughput or
# utilization figure the default order knows (the measured change's other fields, input
# tokens/s and the DCGM ratios, are what a change moves on the way, not what it aims at).
TARGETS = (*LATENCY_FIELDS, "output_tps", "qps", "gpu_util")
# Where a headline's target came from.
STATED = "stated"
HYPOTHESIS = "hypothesis"
DEFAULT = "default"

# "TTFT P99", "ttft p90", "E2E-P99", "E2E P99.9", "TPOT": a latency figure as people and the
# gate write it.
_FIGURE = re.compile(
    r"\b(" + "|".join(LATENCY_METRICS) + r")\b(?:[\s_-]*(p\d{2,3}(?:\.\d)?)\b)?", re.IGNORECASE
)
# The sentence `analysis.gate.report.experiment_reading` writes into an experiment's notes.
_GATE_TOO_FEW = re.compile(r"Too few requests to judge: ([^.\n]*)")


@dataclass(frozen=True)
class Headline:
    """The change the summary shows. `targeted`: the metric is the target's figure (else the
    default). `replaces`: the percentile field it stands in for, judged to rest on too few
    requests (None when it is the figure itself). `target`: the figure aimed at (None: no
    target), and `source` where it came from: STATED, HYPOTHESIS, or DEFAULT when none."""

    delta: MetricDelta
    targeted: bool
    replaces: str | None = None
    target: str | None = None
    source: str = DEFAULT

    @property
    def metric(self) -> str:
        return self.delta.metric

    @property
    def target_unmeasured(self) -> bool:
        """A target the two baselines did not both measure: the default leads instead."""
        return self.target is not None and not self.targeted and self.replaces != self.target

    @property
    def replaced_percentile(self) -> str:
        """ "P99" for a headline standing in for a P99 ("" when it stands in for nothing)."""
        return self.replaces.split("_")[1].upper() if self.replaces else ""


def target_metric(hypothesis: str) -> str | None:
    """The latency field the hypothesis names first ("cutting TTFT P99" -> ttft_p99_ms); a
    figure named without a percentile means its P99, the tail the default headline shows.
    None when it names no latency figure (throughput targets are not read from prose)."""
    for match in _FIGURE.finditer(hypothesis or ""):
        metric = match.group(1).lower()
        percentile = (match.group(2) or "p99").lower().replace(".", "")  # p99.9 -> p999
        if percentile in PERCENTILE_LABELS:
            return latency_field(metric, percentile)
    return None


def target_of(stated: str | None, hypothesis: str) -> tuple[str | None, str]:
    """(target, source): the stated target when there is one, else the figure the hypothesis
    names (how experiments recorded before targets could be stated keep their headline), else
    (None, DEFAULT)."""
    if stated:
        return stated, STATED
    named = target_metric(hypothesis)
    return (named, HYPOTHESIS) if named else (None, DEFAULT)


def too_few_requests(count_before: int | None, count_after: int | None) -> set[str]:
    """The percentile labels ("p99", ...) the gate's rule would not judge for runs of these
    request counts: fewer than TAIL_REQUESTS requests beyond the quantile on a side. An
    unknown count rules nothing out."""
    counts = [n for n in (count_before, count_after) if n is not None]
    return {
        label
        for label, q in QUANTILE_OF.items()
        if any(math.floor(n * (1 - q) + 1e-9) < TAIL_REQUESTS for n in counts)
    }


def gate_too_few(notes: str) -> set[str]:
    """The latency fields the release gate's reading in `notes` called too few requests to
    judge ("Too few requests to judge: E2E P99, TTFT P99" -> {e2e_p99_ms, ttft_p99_ms})."""
    fields = set()
    for sentence in _GATE_TOO_FEW.findall(notes or ""):
        for label in sentence.split(","):
            words = label.lower().split()
            if len(words) == 2 and words[0] in LATENCY_METRICS and words[1] in PERCENTILE_LABELS:
                fields.add(latency_field(*words))
    return fields


def choose(
    deltas: Sequence[MetricDelta],
    *,
    target: str | None = None,
    source: str = HYPOTHESIS,
    unjudgeable: Iterable[str] = (),
) -> Headline | None:
    """The headline among `deltas`: `target`'s change when it was measured, else the default
    order's first. `source`: where the target came from (STATED, HYPOTHESIS), kept on the
    headline. `unjudgeable`: latency fields (or bare percentile labels, "p99", for every
    figure) with too few requests; such a field is replaced by the same figure's next lower
    percentile that is judgeable and measured. None without any delta to show."""
    aim = {"target": target, "source": source if target is not None else DEFAULT}
    by_metric = {d.metric: d for d in deltas}
    ruled_out = set(unjudgeable)
    targeted = target is not None and target in by_metric
    wanted = target if targeted else next((m for m in DEFAULT_ORDER if m in by_metric), None)
    if wanted is None:
        return None
    shown = _judgeable(wanted, by_metric, ruled_out)
    if shown is None:
        # No percentile of the wanted figure can be judged: the default's other figures may be.
        others = (m for m in DEFAULT_ORDER if m != wanted and m in by_metric)
        found = next((s for m in others if (s := _judgeable(m, by_metric, ruled_out))), None)
        if found is None:
            return None
        return Headline(by_metric[found], targeted=False, replaces=wanted, **aim)
    replaces = None if shown == wanted else wanted
    return Headline(by_metric[shown], targeted, replaces=replaces, **aim)


def _judgeable(metric: str, by_metric: dict[str, MetricDelta], ruled_out: set[str]) -> str | None:
    """`metric`, or the nearest lower percentile of its figure that is measured and judgeable."""
    parts = metric.split("_")
    if len(parts) != 3 or parts[1] not in PERCENTILE_LABELS:
        return metric  # not a percentile: the tail rule does not apply
    family, percentile = parts[0], parts[1]
    lower = [p for p in PERCENTILE_LABELS if QUANTILE_OF[p] <= QUANTILE_OF[percentile]]
    for label in sorted(lower, key=QUANTILE_OF.get, reverse=True):
        field = latency_field(family, label)
        if field in by_metric and field not in ruled_out and label not in ruled_out:
            return field
    return None
