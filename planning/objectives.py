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
        return f"{self.metric.upper()} {self.percentile.upper()} ≤ {self.limit_ms:g} ms"

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
    """The service's own objectives: today its P99 SLO fields (end-to-end, TTFT, TPOT)."""
    return [
        Objective(metric, "p99", float(limit))
        for metric in ("ttft", "tpot", "e2e")
        if (limit := service.slo_for(metric))
    ]
