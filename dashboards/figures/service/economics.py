"""A service's economics chart: live cost per million tokens against its price."""

from __future__ import annotations

from core.templatetags.display import money
from dashboards.figures.common import (
    BASELINE_LINE,
    SERIES_COLORS,
    add_note,
    add_time_markers,
    arr,
    empty_spec,
    figure,
    layout,
    scatter,
    times_column,
    ts,
)
from dashboards.figures.service.shared import _no_samples, _x_range
from dashboards.selectors import ServiceDashboard
from dossiers.models import Service

MUTED_LINE = "#6b7385"


def _tokens_per_second(p, basis: str) -> float | None:
    if p.generation_tps is None:
        return None
    if basis == Service.TokenBasis.TOTAL:
        return p.generation_tps + (p.prompt_tps or 0.0)
    return p.generation_tps


def economics_figure(d: ServiceDashboard) -> dict:
    """Cost per million tokens (allocation basis) and margin over time, from the token rate."""
    service = d.service
    tokens = "input + output" if service.token_basis == Service.TokenBasis.TOTAL else "output"
    title = f"Cost per million {tokens} tokens (allocation basis) and margin"
    y_title = f"{service.currency} per Mtok"
    rows = []
    for p in d.metrics.points:
        tps = _tokens_per_second(p, service.token_basis)
        if tps and tps > 0:
            rows.append((p.t, tps))
    if not rows:
        reason = _no_samples(d) if not d.metrics.points else (
            "No token rate in this range, so no cost per Mtok: the engine's /metrics has no"
            " generation token counter and agents pushed no output token counts."
        )  # fmt: skip
        return empty_spec(title, reason, y_title=y_title)
    price = None if service.price_per_mtok is None else float(service.price_per_mtok)
    gpus = d.gpus
    econ = [service.economics(tokens_per_second=tps, gpus=gpus) for _, tps in rows]
    fig = figure(
        layout(
            title, y_title=y_title, y2_title="margin (%)" if price else None, x_range=_x_range(d)
        )
    )
    x = times_column([t for t, _ in rows])
    fig["data"].append(
        scatter(
            name="cost per Mtok",
            x=x,
            y=arr(e.cost_per_mtok for e in econ),
            customdata=arr(round(tps) for _, tps in rows),
            mode="lines",
            line={"color": SERIES_COLORS[0], "width": 2},
            hovertemplate=f"%{{y:.2f}} {service.currency} at %{{customdata:,}} tok/s on {gpus}"
            " GPUs<extra>cost per Mtok</extra>",
        )
    )
    if price:
        fig["data"].append(
            scatter(
                name=f"price charged ({price:g} {service.currency}/Mtok)",
                x=[ts(d.start), ts(d.end)],
                y=[price, price],
                mode="lines",
                line={"color": MUTED_LINE, "dash": "dash", "width": 1.5},
                hoverinfo="name",
            )
        )
        fig["data"].append(
            scatter(
                name="margin (%)",
                x=x,
                y=arr(e.margin_percent for e in econ),
                mode="lines",
                yaxis="y2",
                line={"color": SERIES_COLORS[1], "width": 1.5},
                hovertemplate="%{y:.1f}%<extra>margin</extra>",
            )
        )
        lowest = min(e.margin_percent for e in econ)
        fig["layout"]["yaxis2"].update(range=[min(0.0, lowest * 1.1), 100], dtick=20)
    else:
        add_note(fig, "No price per Mtok is set for this service, so there is no margin.")
    base = d.baseline.economics(service) if d.baseline else None
    if base is not None:
        fig["data"].append(
            scatter(
                name=f"baseline cost ({money(base.cost_per_mtok)} {service.currency}/Mtok)",
                x=[ts(d.start), ts(d.end)],
                y=[base.cost_per_mtok, base.cost_per_mtok],
                mode="lines",
                line={"color": BASELINE_LINE, "dash": "dot", "width": 1.5},
                hoverinfo="name",
            )
        )
    add_time_markers(fig, d.markers)
    return fig
