"""What every PerfHub chart shares: the look, the empty state, time markers, and the payload.

Figures are plain `plotly.graph_objects.Figure`s built on the server; the browser only draws
them (static/js/panels.js). Times go to Plotly as naive UTC strings, since plotly.js ignores
offsets; axis titles say "UTC".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import plotly.graph_objects as go
from plotly.utils import PlotlyJSONEncoder

FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif'
INK = "#1d2330"
MUTED = "#6b7385"
GRID = "#e8ebf0"
# Percentiles from light to dark, so the tail reads as the heaviest line.
PERCENTILE_COLORS = {"p50": "#7aa2f7", "p90": "#2f5bd3", "p99": "#b42318", "p999": "#6d1410"}
SERIES_COLORS = ["#2f5bd3", "#1e7a46", "#c2410c", "#7c3aed", "#0e7490", "#a16207", "#be185d"]
SLO_COLOR = "#b42318"
BASELINE_FILL = "rgba(30, 122, 70, 0.12)"
BASELINE_LINE = "rgba(30, 122, 70, 0.55)"
MARKER_COLORS = {"bad": "#b42318", "ok": "#1e7a46", "warn": "#b7791f", "info": "#2f5bd3"}
MARKER_DASH = {"alert": "dot", "deploy": "dash", "experiment": "dashdot", "gate": "longdash"}
MARKER_LABELS = {"alert": "⚑", "deploy": "⬆", "experiment": "⚗", "gate": "✓"}
TIME_AXIS_TITLE = "time (UTC)"


def arr(values: Iterable) -> np.ndarray:
    """A trace array. Plotly validates numpy arrays ~30x faster than lists (a month of hourly
    points per trace); numbers become float with NaN for gaps (sent to the browser as null)."""
    values = list(values)
    if all(v is None or isinstance(v, int | float) for v in values):
        return np.array([np.nan if v is None else v for v in values], dtype=float)
    return np.array(values, dtype=object)


def one_or_many(values: list):
    """A per-point style as one scalar when every point shares it (cheaper to validate)."""
    return values[0] if values and all(v == values[0] for v in values) else arr(values)


def ts(t: datetime) -> str:
    """A time as plotly.js reads it: naive UTC."""
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def layout(
    title: str,
    *,
    y_title: str,
    x_title: str = TIME_AXIS_TITLE,
    y2_title: str | None = None,
    x_range: tuple[datetime, datetime] | None = None,
    height: int = 380,
) -> dict:
    """The shared layout: title, axis titles with units, a horizontal legend below the plot."""
    spec: dict = {
        "title": {"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        "font": {"family": FONT, "color": INK, "size": 12},
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "height": height,
        "margin": {"l": 64, "r": 64 if y2_title else 24, "t": 56, "b": 112},
        "showlegend": True,
        # Below the x-axis title, anchored to the figure's bottom edge so they never overlap.
        "legend": {
            "orientation": "h",
            "yref": "container",
            "y": 0,
            "yanchor": "bottom",
            "x": 0,
            "font": {"size": 11},
        },
        "hovermode": "closest",
        "xaxis": {
            "title": {"text": x_title},
            "gridcolor": GRID,
            "zeroline": False,
            "automargin": True,
        },
        "yaxis": {
            "title": {"text": y_title},
            "gridcolor": GRID,
            "zeroline": False,
            "rangemode": "tozero",
            "automargin": True,
        },
    }
    if x_range is not None:
        spec["xaxis"]["range"] = [ts(x_range[0]), ts(x_range[1])]
        spec["xaxis"]["type"] = "date"
    if y2_title:
        spec["yaxis2"] = {
            "title": {"text": y2_title},
            "overlaying": "y",
            "side": "right",
            "showgrid": False,
            "rangemode": "tozero",
            "automargin": True,
        }
    return spec


def empty_figure(title: str, reason: str, *, y_title: str = "", x_title: str = "") -> go.Figure:
    """A chart with no data that says why, in its middle, so nobody reads a blank as "fine"."""
    fig = go.Figure(layout=layout(title, y_title=y_title, x_title=x_title, height=280))
    fig.update_layout(
        xaxis={"visible": False},
        yaxis={"visible": False},
        margin={"b": 24},
        annotations=[
            {
                "text": wrap(reason, 64),
                "xref": "paper",
                "yref": "paper",
                "x": 0.5,
                "y": 0.5,
                "showarrow": False,
                "font": {"size": 13, "color": MUTED},
                "align": "center",
            }
        ],
        meta={"empty": reason},
    )
    return fig


def is_empty(fig: go.Figure) -> str | None:
    """The empty-state reason of a figure made by `empty_figure`, else None."""
    meta = fig.layout.meta
    return meta.get("empty") if isinstance(meta, dict) else None


def wrap(text: str, width: int = 70) -> str:
    """Break a long note into <br>-separated lines (Plotly annotations do not wrap)."""
    words, lines, line = text.split(), [], ""
    for word in words:
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}".strip()
    if line:
        lines.append(line)
    return "<br>".join(lines)


def add_note(fig: go.Figure, text: str) -> None:
    """A small note under the title (e.g. "SM active is not reported by these GPUs")."""
    fig.add_annotation(
        text=wrap(text, 110),
        xref="paper",
        yref="paper",
        x=0,
        y=1.0,
        yanchor="bottom",
        xanchor="left",
        showarrow=False,
        font={"size": 11, "color": MUTED},
        align="left",
    )


def add_time_markers(fig: go.Figure, markers: Iterable) -> None:
    """Alerts, deploys and experiments as vertical lines with a hoverable label at the top."""
    for marker in markers:
        x = ts(marker.at)
        color = MARKER_COLORS.get(marker.tone, MARKER_COLORS["info"])
        fig.add_shape(
            type="line",
            xref="x",
            yref="paper",
            x0=x,
            x1=x,
            y0=0,
            y1=1,
            line={"color": color, "width": 1, "dash": MARKER_DASH.get(marker.kind, "dot")},
            layer="below",
        )
        hover = f"{marker.title}<br>{marker.at:%Y-%m-%d %H:%M} UTC"
        if marker.detail:
            hover += "<br>" + wrap(marker.detail, 60)
        fig.add_annotation(
            x=x,
            xref="x",
            y=1.0,
            yref="paper",
            yanchor="bottom",
            text=MARKER_LABELS.get(marker.kind, "•"),
            hovertext=hover,
            showarrow=False,
            font={"color": color, "size": 12},
        )


@dataclass(frozen=True)
class Panel:
    """One chart of a dashboard: an id for the DOM, the figure, and whether it spans the row."""

    id: str
    figure: go.Figure
    wide: bool = False

    def to_dict(self) -> dict:
        return {
            "id": self.id,
            "wide": self.wide,
            "empty": is_empty(self.figure),
            "figure": self.figure.to_plotly_json(),
        }


def panels_payload(panels: list[Panel], **extra) -> dict:
    """What panels.js reads: {"panels": [{id, wide, empty, figure}], ...extra}. Encode it with
    PlotlyJSONEncoder (figures may hold dates or numpy values)."""
    return {**extra, "panels": [p.to_dict() for p in panels]}


def panels_json(panels: list[Panel], **extra) -> str:
    return json.dumps(panels_payload(panels, **extra), cls=PlotlyJSONEncoder)
