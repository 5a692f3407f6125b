"""Latency objectives a plan must hold: "TTFT P99 <= 500 ms" is `ttft_p99_ms=500`.

Objectives come from the command, the page or the API in that form, and by default from the
service (`service_objectives`, the one place that knows where a service keeps its SLOs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from analysis.percentiles import LATENCY_METRICS, QUANTILE_OF
from dossiers.models import Service

_NAME = re.compile(r"^(?P<metric>[a-z0-9]+)_(?P<p>p\d+)_ms$")


class ObjectiveError(ValueError):
    """An objective that cannot be read; the message names it."""


@dataclass(frozen=True)
class Objective:
    metric: str  # "ttft", "tpot", "e2e"
    percentile: str  # "p50", "p90", "p95", "p99", "p999"
    limit_ms: float

    @property
    def name(self) -> str:
        return f"{self.metric}_{self.percentile}_ms"

    @property
    def quantile(self) -> float:
        return QUANTILE_OF[self.percentile]

    @property
    def label(self) -> str:
        return f"{self.metric.upper()} {self.percentile.upper()} ≤ {self.limit_ms:,g} ms"

    def to_dict(self) -> dict:
        return {"name": self.name, "limit_ms": self.limit_ms}


def parse_objective(text: str) -> Objective:
    """`ttft_p99_ms=500` -> Objective; ObjectiveError naming what is wrong otherwise."""
    name, sep, value = text.strip().partition("=")
    name = name.strip()
    if not sep:
        raise ObjectiveError(f"SLO {text!r}: expected NAME=MS, e.g. ttft_p99_ms=500")
    match = _NAME.match(name)
    if not match:
        raise ObjectiveError(f"SLO {name!r}: expected <metric>_<percentile>_ms, e.g. ttft_p99_ms")
    metric, percentile = match["metric"], match["p"]
    if metric not in LATENCY_METRICS:
        raise ObjectiveError(f"SLO {name!r}: metric must be one of {', '.join(LATENCY_METRICS)}")
    if percentile not in QUANTILE_OF:
        raise ObjectiveError(f"SLO {name!r}: percentile must be one of {', '.join(QUANTILE_OF)}")
    try:
        limit = float(value)
    except ValueError:
        raise ObjectiveError(f"SLO {name!r}: {value.strip()!r} is not a number of ms") from None
    if not (math.isfinite(limit) and limit > 0):
        raise ObjectiveError(f"SLO {name!r}: the limit must be a positive number of ms")
    return Objective(metric, percentile, limit)


def parse_objectives(texts: list[str]) -> list[Objective]:
    """Several objectives; a metric/percentile given twice keeps the stricter limit."""
    found: dict[str, Objective] = {}
    for text in texts:
        for part in text.replace(";", ",").split(","):
            if part.strip():
                objective = parse_objective(part)
                old = found.get(objective.name)
                if old is None or objective.limit_ms < old.limit_ms:
                    found[objective.name] = objective
    return list(found.values())


def service_objectives(service: Service) -> list[Objective]:
    """The service's own latency SLOs (`Service.objectives()`: its SLO objects, or the implied
    one of its "SLO P99" fields) as percentile objectives: "TTFT <= 500 ms for 99% of requests"
    is `ttft_p99_ms <= 500`; and its "SLO P99" fields. A target between the sweeps' standard
    percentiles takes the next stricter one (99.5% -> P99.9), so a plan never promises less
    than the SLO. Several SLOs on
    one metric keep the strictest. A joint SLO (TTFT and TPOT met by the same request) is held
    per metric here: the plan's goodput table bounds the joint share."""
    found: dict[str, Objective] = {}
    # The "SLO P99" fields still drive the P99 rules and the gate beside any SLO objects, so a
    # plan holds them too.
    p99_fields = [(m, service.slo_for(m), 0.99) for m in ("ttft", "tpot", "e2e")]
    for metric, limit, target in [*service.objectives(), *p99_fields]:
        if not limit:
            continue
        percentile = _percentile_at_least(target)
        objective = Objective(metric, percentile, float(limit))
        old = found.get(objective.name)
        if old is None or objective.limit_ms < old.limit_ms:
            found[objective.name] = objective
    return list(found.values())


def _percentile_at_least(target: float) -> str:
    """The smallest standard percentile label whose quantile is at least `target`."""
    for label, quantile in sorted(QUANTILE_OF.items(), key=lambda item: item[1]):
        if quantile >= target - 1e-9:
            return label
    return max(QUANTILE_OF, key=QUANTILE_OF.get)
