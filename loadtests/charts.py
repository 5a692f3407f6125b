"""Plotly figures for load-test pages, built server-side; pages load the packaged plotly.js."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go
from django.utils.html import json_script
from plotly.utils import PlotlyJSONEncoder

from loadtests.one_change import OneChange
from loadtests.sweeps import SweetSpot


def _setting(sweep, run) -> str:
    x = sweep.x(run)
    return f"c={x:g}" if sweep.axis == "concurrency" else f"{x:g} req/s"


def sweep_figure(spot: SweetSpot, changes: Sequence[OneChange] = ()) -> go.Figure:
    """Output tokens/s (x) against P99 end-to-end latency (y), one marker per setting, the
    sweet spot annotated and the SLO drawn as a horizontal line; the sweeps one parameter apart
    (`changes` into this one) drawn grey beside it, each named by its value of the parameter."""
    sweep = spot.sweep
    runs = sweep.plotted_runs
    fig = go.Figure()
    others = [(f"{c.key}={c.before_value}", c.other) for c in changes]
    keys = {c.key for c in changes}
    label = f"{changes[0].key}={changes[0].after_value}" if len(keys) == 1 else "this sweep"
    for other_label, other in others:
        fig.add_trace(
            go.Scatter(
                x=[r.output_tps for r in other.plotted_runs],
                y=[r.e2e_p99_ms for r in other.plotted_runs],
                mode="lines+markers",
                line={"color": "#aaa", "dash": "dot"},
                name=other_label,
                text=[_setting(other, r) for r in other.plotted_runs],
                hovertemplate=f"{other_label}<br>%{{text}}<br>%{{x:,.0f}} tok/s<br>"
                "P99 %{y:,.0f} ms<extra></extra>",
            )
        )
    fig.add_trace(
        go.Scatter(
            x=[r.output_tps for r in runs],
            y=[r.e2e_p99_ms for r in runs],
            mode="lines+markers+text",
            text=[_setting(sweep, r) for r in runs],
            textposition="top left",
            line={"color": "#636efa"},  # plotly's first colour, whether or not others come first
            name=label,
            hovertemplate="%{text}<br>%{x:,.0f} tok/s<br>P99 %{y:,.0f} ms<extra></extra>",
        )
    )
    best = spot.run
    if best is not None:
        fig.add_trace(
            go.Scatter(
                x=[best.output_tps],
                y=[best.e2e_p99_ms],
                mode="markers",
                marker={"size": 16, "symbol": "star", "color": "#d62728"},
                name="sweet spot",
                hoverinfo="skip",
            )
        )
        fig.add_annotation(
            x=best.output_tps,
            y=best.e2e_p99_ms,
            text=f"sweet spot: {_setting(sweep, best)}",
            showarrow=True,
            arrowhead=2,
            ax=-60,
            ay=-50,
        )
    if spot.slo_p99_ms:
        fig.add_hline(
            y=spot.slo_p99_ms,
            line_dash="dash",
            line_color="#888",
            annotation_text=f"SLO P99 {spot.slo_p99_ms:,.0f} ms",
            annotation_position="top left",
        )
    fig.update_layout(
        xaxis_title="output tokens/s",
        yaxis_title="P99 end-to-end latency (ms)",
        margin={"l": 60, "r": 20, "t": 30, "b": 50},
        height=420,
        showlegend=bool(others),
        legend={"orientation": "h", "y": -0.2},
        template="plotly_white",
    )
    return fig


def to_json_script(fig: go.Figure, element_id: str) -> str:
    """The figure as a JSON <script> that static/js/panels.js draws (`data-figure-json`):
    no inline script, so the page's CSP can forbid them."""
    return json_script(fig.to_plotly_json(), element_id, PlotlyJSONEncoder)
