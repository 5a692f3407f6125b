"""What every PerfHub chart shares: the look, the empty state, time markers, and the payload.

Figures are built on the server; the browser only draws them (static/js/panels.js). The
service dashboard's figures (a month of points per trace) are plain figure dicts, the form
plotly.js reads, with numeric columns as plotly.js typed arrays and the default template
plotly.py would add: what `go.Figure(spec).to_plotly_json()` gives, without graph objects'
validation and deep copies (two thirds of the page's time). The tests load each one into
`go.Figure`, which validates it. The small fleet and load-test figures stay graph objects.
Times go to Plotly as naive UTC strings, since plotly.js ignores offsets; axis titles say
"UTC".
"""

from __future__ import annotations

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache

import numpy as np
import orjson
import plotly.graph_objects as go
import plotly.io as pio
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
    """A trace array: numbers become float with NaN for gaps (None; sent to the browser as a
    gap), anything else an object array."""
    values = list(values)
    if not any(isinstance(v, str) for v in values):
        try:
            return np.array(values, dtype=float)
        except (TypeError, ValueError):
            pass
    return np.array(values, dtype=object)


def times_column(times: Iterable[datetime]) -> np.ndarray:
    """Aware times as one datetime64 array (naive UTC, what plotly.js reads): far cheaper
    than formatting each with `ts`."""
    return np.array([int(t.timestamp()) for t in times], dtype="datetime64[s]")


def one_or_many(values: list):
    """A per-point style as one scalar when every point shares it (less to send and draw)."""
    return values[0] if values and all(v == values[0] for v in values) else arr(values)


def column(values: np.ndarray) -> dict | list:
    """A trace array as plotly.js reads it, the way plotly.py encodes numpy arrays: numbers
    as a typed array (base64 of little-endian float64; NaN draws as a gap), text and
    times as a list (datetime64 as ISO strings)."""
    if values.dtype.kind in "fiub":
        data = np.ascontiguousarray(values, dtype="<f8")
        if data.size:
            return {"dtype": "f8", "bdata": base64.b64encode(data).decode("ascii")}
        return []
    if values.dtype.kind == "M":
        return np.datetime_as_string(values).tolist()
    return values.tolist()


@cache
def _template(name: str) -> dict:
    return pio.templates[name].to_plotly_json()


def figure(layout_spec: dict) -> dict:
    """A figure dict without traces, with the default template as `go.Figure` would set it
    (one shared dict, read-only: it is only serialized)."""
    return {"data": [], "layout": {**layout_spec, "template": _template(pio.templates.default)}}


def scatter(**props) -> dict:
    """A scatter trace dict; its arrays may be numpy arrays (encoded by `panels_payload`)."""
    return {"type": "scatter", **props}


def line(name: str, x, y, *, color: str, width: float = 1.5, dash: str = "", **props) -> dict:
    """A named series drawn as a line; `props`: the rest of the trace (hovertemplate, yaxis)."""
    style = {"color": color, "width": width, **({"dash": dash} if dash else {})}
    return scatter(name=name, x=x, y=y, mode="lines", line=style, **props)


def level_line(
    name: str, start: datetime, end: datetime, value: float, *, color: str, dash: str = "dash"
) -> dict:
    """A level across the range (an SLO, a price, a baseline), hovered by its name."""
    return line(
        name, [ts(start), ts(end)], [value, value], color=color, dash=dash, hoverinfo="name"
    )


def _columns(props: dict, done: dict[int, dict | list]) -> dict:
    """A trace with its numpy arrays (at any depth, e.g. marker.symbol) as `column`s; `done`
    keeps each array's column by identity, since traces share their x (one per point)."""
    out = {}
    for key, value in props.items():
        if isinstance(value, np.ndarray):
            if id(value) not in done:
                done[id(value)] = column(value)
            value = done[id(value)]
        elif isinstance(value, dict):
            value = _columns(value, done)
        out[key] = value
    return out


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


def empty_spec(title: str, reason: str, *, y_title: str = "", x_title: str = "") -> dict:
    """A chart with no data that says why, in its middle, so nobody reads a blank as "fine"."""
    spec = layout(title, y_title=y_title, x_title=x_title, height=280)
    spec["xaxis"] = {**spec["xaxis"], "visible": False}
    spec["yaxis"] = {**spec["yaxis"], "visible": False}
    spec["margin"] = {**spec["margin"], "b": 24}
    spec["annotations"] = [
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
    ]
    spec["meta"] = {"empty": reason}
    return figure(spec)


def empty_figure(title: str, reason: str, *, y_title: str = "", x_title: str = "") -> go.Figure:
    """`empty_spec` as a graph object, for the figures built as graph objects."""
    return go.Figure(empty_spec(title, reason, y_title=y_title, x_title=x_title))


def is_empty(fig: go.Figure | dict) -> str | None:
    """The empty-state reason of a figure made by `empty_spec` / `empty_figure`, else None."""
    meta = fig["layout"].get("meta") if isinstance(fig, dict) else fig.layout.meta
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


def _note(text: str) -> dict:
    return {
        "text": wrap(text, 110),
        "xref": "paper",
        "yref": "paper",
        "x": 0,
        "y": 1.0,
        "yanchor": "bottom",
        "xanchor": "left",
        "showarrow": False,
        "font": {"size": 11, "color": MUTED},
        "align": "left",
    }


def add_note(fig: go.Figure | dict, text: str) -> None:
    """A small note under the title (e.g. "SM active is not reported by these GPUs")."""
    if isinstance(fig, dict):
        fig["layout"].setdefault("annotations", []).append(_note(text))
    else:
        fig.add_annotation(**_note(text))


def add_time_markers(fig: dict, markers: Iterable) -> None:
    """Alerts, deploys and experiments as vertical lines with a hoverable label at the top."""
    markers = list(markers)
    if not markers:
        return
    shapes = fig["layout"].setdefault("shapes", [])
    annotations = fig["layout"].setdefault("annotations", [])
    for marker in markers:
        x = ts(marker.at)
        color = MARKER_COLORS.get(marker.tone, MARKER_COLORS["info"])
        shapes.append(
            {
                "type": "line",
                "xref": "x",
                "yref": "paper",
                "x0": x,
                "x1": x,
                "y0": 0,
                "y1": 1,
                "line": {"color": color, "width": 1, "dash": MARKER_DASH.get(marker.kind, "dot")},
                "layer": "below",
            }
        )
        hover = f"{marker.title}<br>{marker.at:%Y-%m-%d %H:%M} UTC"
        if marker.detail:
            hover += "<br>" + wrap(marker.detail, 60)
        annotations.append(
            {
                "x": x,
                "xref": "x",
                "y": 1.0,
                "yref": "paper",
                "yanchor": "bottom",
                "text": MARKER_LABELS.get(marker.kind, "•"),
                "hovertext": hover,
                "showarrow": False,
                "font": {"color": color, "size": 12},
            }
        )


@dataclass(frozen=True)
class Panel:
    """One chart of a dashboard: an id for the DOM, the figure, and whether it spans the row."""

    id: str
    figure: go.Figure | dict
    wide: bool = False

    def to_dict(self, done: dict[int, dict | list] | None = None) -> dict:
        if isinstance(self.figure, dict):
            done = {} if done is None else done
            figure = {**self.figure, "data": [_columns(t, done) for t in self.figure["data"]]}
        else:
            figure = self.figure.to_plotly_json()
        return {"id": self.id, "wide": self.wide, "empty": is_empty(self.figure), "figure": figure}


def panels_payload(panels: list[Panel], **extra) -> dict:
    """What panels.js reads: {"panels": [{id, wide, empty, figure}], ...extra}. Encode it with
    PlotlyJSONEncoder (figures may hold dates or numpy values)."""
    done: dict[int, dict | list] = {}  # shared across panels: they draw the same times
    return {**extra, "panels": [p.to_dict(done) for p in panels]}


def panels_json(panels: list[Panel], **extra) -> bytes:
    """The payload as JSON bytes, by orjson (plotly.io's fast engine; NaN as null, numpy
    natively, anything else as PlotlyJSONEncoder encodes it). Not plotly.io.to_json: its
    escaping of "<", ">" and "/" for HTML, a pass over every string, is for JSON embedded in
    a page, and this is served as application/json; the figures need no validation."""
    return orjson.dumps(
        panels_payload(panels, **extra),
        default=PlotlyJSONEncoder().default,
        option=orjson.OPT_SERIALIZE_NUMPY,
    )
