"""A service's traffic chart: requests and tokens per second."""

from __future__ import annotations

from dashboards.figures.common import (
    SERIES_COLORS,
    add_time_markers,
    arr,
    empty_spec,
    figure,
    layout,
    scatter,
)
from dashboards.figures.service.shared import _no_samples, _x_range
from dashboards.selectors import ServiceDashboard


def throughput_figure(d: ServiceDashboard) -> dict:
    """QPS on the left axis, prompt and generated tokens per second on the right."""
    title = "Throughput: requests and tokens per second"
    points = d.metrics.points
    if not points:
        return empty_spec(title, _no_samples(d), y_title="requests/s")
    if all(p.qps is None and p.generation_tps is None for p in points):
        return empty_spec(
            title,
            "Latency arrived but no request or token counts: the engine's /metrics has no"
            " request/token counters and agents pushed no requests.",
            y_title="requests/s",
        )
    fig = figure(layout(title, y_title="requests/s", y2_title="tokens/s", x_range=_x_range(d)))
    x = d.metrics.x_array
    fig["data"].append(
        scatter(
            name="QPS (requests/s)",
            x=x,
            y=arr(p.qps for p in points),
            mode="lines",
            line={"color": SERIES_COLORS[0], "width": 2},
            hovertemplate="%{y:.2f} req/s<extra>QPS</extra>",
        )
    )
    fig["data"].append(
        scatter(
            name="generated tokens/s",
            x=x,
            y=arr(p.generation_tps for p in points),
            mode="lines",
            yaxis="y2",
            line={"color": SERIES_COLORS[1], "width": 1.5},
            hovertemplate="%{y:,.0f} tok/s<extra>generated</extra>",
        )
    )
    if any(p.prompt_tps is not None for p in points):
        fig["data"].append(
            scatter(
                name="prompt tokens/s",
                x=x,
                y=arr(p.prompt_tps for p in points),
                mode="lines",
                yaxis="y2",
                line={"color": SERIES_COLORS[2], "width": 1.5, "dash": "dot"},
                hovertemplate="%{y:,.0f} tok/s<extra>prompt</extra>",
            )
        )
    add_time_markers(fig, d.markers)
    return fig
