"""A service's live charts, from `collectors.selectors.service_metrics` (roll-ups only).

Each function takes the `ServiceDashboard` the selector built and returns a figure dict
(`dashboards.figures.common.figure`: plotly.js's form, never validated on the request path);
with no data it returns an empty figure whose text says why.

One module a chart family: `latency`, and `usage` (throughput, GPUs, economics); `shared` holds
what they share. The panels in reading order are here, and every name the single module had is
re-exported.
"""

from dashboards.figures.common import Panel
from dashboards.figures.service.latency import (
    COUNTED,
    LATENCY_LABELS,
    SCRAPED_HISTOGRAMS,
    SHOWN_PERCENTILES,
    WHERE,
    _add_baseline_band,
    latency_figure,
)
from dashboards.figures.service.shared import _no_samples, _x_range
from dashboards.figures.service.usage import (
    GB,
    MUTED_LINE,
    economics_figure,
    gpu_busy_figure,
    memory_figure,
    throughput_figure,
)
from dashboards.selectors import ServiceDashboard

PANELS = {
    "latency-e2e": (lambda d: latency_figure(d, "e2e"), True),
    "latency-ttft": (lambda d: latency_figure(d, "ttft"), False),
    "latency-tpot": (lambda d: latency_figure(d, "tpot"), False),
    "latency-itl": (lambda d: latency_figure(d, "itl"), False),
    "throughput": (throughput_figure, False),
    "gpu-busy": (gpu_busy_figure, False),
    "memory": (memory_figure, False),
    "economics": (economics_figure, False),
}


def service_panels(d: ServiceDashboard, only: list[str] | None = None) -> list[Panel]:
    """The service dashboard's charts in reading order; `only` picks some by id."""
    return [
        Panel(panel_id, build(d), wide=wide)
        for panel_id, (build, wide) in PANELS.items()
        if only is None or panel_id in only
    ]


__all__ = [
    "COUNTED",
    "GB",
    "LATENCY_LABELS",
    "MUTED_LINE",
    "PANELS",
    "SCRAPED_HISTOGRAMS",
    "SHOWN_PERCENTILES",
    "WHERE",
    "_add_baseline_band",
    "_no_samples",
    "_x_range",
    "economics_figure",
    "gpu_busy_figure",
    "latency_figure",
    "memory_figure",
    "service_panels",
    "throughput_figure",
]
