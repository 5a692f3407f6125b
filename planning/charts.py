"""The planner page's figure: each fitted percentile against load with its 80% band, the
measured points, the SLO lines and the chosen operating point."""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from analysis import capacity
from planning.plan import Plan

COLORS = {"p50": "#1f77b4", "p90": "#ff7f0e", "p99": "#d62728"}
TITLES = {"ttft": "TTFT", "tpot": "TPOT", "e2e": "End-to-end"}


def _trace(fig: go.Figure, row: int, name: str, xs: list, ys: list, **style) -> None:
    """One curve of the figure's `row`, its name in the hover box (mode and colour: `style`)."""
    fig.add_trace(
        go.Scatter(
            x=xs,
            y=ys,
            name=name,
            hovertemplate=f"%{{x:.3g}}: %{{y:,.0f}} ms<extra>{name}</extra>",
            **style,
        ),
        row=row,
        col=1,
    )


def log_ticks(low: float, high: float) -> tuple[list[float], list[str]]:
    """Tick values and labels for a log latency axis spanning [low, high] ms: 1-2-5 per decade,
    1-2-3-5 under a decade, powers of ten past three. plotly.js's own choice at these ranges
    labels every digit 2-9 in small type (a column of "2 ... 9" under each "100"), which reads as
    noise at a row's height."""
    if not (0 < low <= high and math.isfinite(high)):
        return [], []
    first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
    decades = math.log10(high / low)
    steps = (1,) if decades > 3 else (1, 2, 5) if decades > 1 else (1, 2, 3, 5)
    values = [
        float(step * 10**exponent)
        for exponent in range(first, last + 1)
        for step in steps
        if low <= step * 10**exponent <= high
    ]
    return values, [f"{value:,g}" for value in values]


def _span(fig: go.Figure, row: int, lines: list[float]) -> tuple[float, float]:
    """The lowest and highest positive y of the row's traces (bands included) and `lines`."""
    ys = [
        y
        for trace in fig.select_traces(row=row, col=1)
        for y in (trace.y or ())
        if y is not None and y > 0
    ]
    ys += [y for y in lines if y > 0]
    return (min(ys), max(ys)) if ys else (0.0, 0.0)


def plan_figure(plan: Plan) -> go.Figure:
    per = plan.per_replica
    metrics = [m for m in ("ttft", "tpot", "e2e") if any(n.startswith(m) for n in per.curves)]
    fig = make_subplots(
        rows=len(metrics),
        cols=1,
        shared_xaxes=True,
        vertical_spacing=0.06,
        subplot_titles=[f"{TITLES[m]} (ms)" for m in metrics],
    )
    z = capacity.percentile_z(0.5 + capacity.LEVEL / 2)
    limits = {o.name: o.limit_ms for o in plan.objectives}
    for row, metric in enumerate(metrics, start=1):
        lines = []  # the row's SLO lines, drawn with their curve
        for percentile, color in COLORS.items():
            curve = per.curves.get(f"{metric}_{percentile}_ms")
            if curve is None:
                continue
            xs = [curve.x_min * (curve.x_max / curve.x_min) ** (i / 60) for i in range(61)]
            ys = [curve.predict(x) for x in xs]
            spread = [math.exp(z * capacity.CALIBRATION * curve.noise_at(x)) for x in xs]
            label = f"{TITLES[metric]} {percentile.upper()}"
            fig.add_trace(
                go.Scatter(
                    x=xs + xs[::-1],
                    y=[y * s for y, s in zip(ys, spread, strict=True)]
                    + [y / s for y, s in zip(ys[::-1], spread[::-1], strict=True)],
                    fill="toself",
                    line={"width": 0},
                    fillcolor=color,
                    opacity=0.15,
                    name=f"{label} 80% band",
                    showlegend=False,
                    hoverinfo="skip",
                ),
                row=row,
                col=1,
            )
            _trace(fig, row, f"{label} fit", xs, ys, mode="lines", line={"color": color})
            px, py = [p.x for p in curve.points], [p.value_ms for p in curve.points]
            _trace(fig, row, f"{label} measured", px, py, mode="markers", marker={"color": color})
            limit = limits.get(f"{metric}_{percentile}_ms")
            if limit:
                lines.append(limit)
                fig.add_hline(y=limit, line={"dash": "dash", "color": color}, row=row, col=1)
                # Not add_hline's annotation_text: plotly.js places an annotation on a log
                # axis at 10^y (plotly.py #2580), so a 50 ms line's label sat at 1e50 ms and
                # stretched the axis to it, flattening every curve of the row.
                fig.add_annotation(
                    x=1,
                    xref="x domain",
                    xanchor="right",
                    y=math.log10(limit),
                    yanchor="bottom",
                    text=f"SLO {label} {limit:,g} ms",
                    showarrow=False,
                    row=row,
                    col=1,
                )
        values, labels = log_ticks(*_span(fig, row, lines))
        fig.update_yaxes(type="log", row=row, col=1)
        if len(values) >= 2:  # else plotly.js's own ticks: at least two labels to read by
            fig.update_yaxes(tickvals=values, ticktext=labels, row=row, col=1)
    if per.result.load is not None:
        fig.add_vline(
            x=per.result.load.value,
            line={"color": "#2ca02c"},
            annotation_text="operating limit",
            # Bottom right: latency rises with load, so that corner is clear, and the top
            # holds each row's title.
            annotation_position="bottom right",
        )
        fig.add_vrect(
            x0=per.result.load.low,
            x1=per.result.load.high,
            fillcolor="#2ca02c",
            opacity=0.08,
            line_width=0,
        )
    fig.update_xaxes(title_text=plan.sweep.axis_label, row=len(metrics), col=1)
    fig.update_layout(height=260 * len(metrics) + 80, margin={"t": 40, "l": 60, "r": 20})
    return fig
