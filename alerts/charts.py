"""The alert detail chart: the rule's value per evaluation against its thresholds (Plotly)."""

from __future__ import annotations

from datetime import UTC, datetime

import plotly.graph_objects as go
from django.utils.html import json_script
from plotly.utils import PlotlyJSONEncoder

from alerts.models import AlertInstance


def chart_points(instance: AlertInstance) -> list[tuple[float, float]]:
    """The values to draw: every evaluation's while the alert was live (`series`), else the
    values its history recorded at each state change (an alert imported or seeded without a
    series), so the chart never says "no value" under a header that shows one."""
    if instance.series:
        return [(p[0], p[1]) for p in instance.series]
    return [
        (e.at.timestamp(), e.value)
        for e in instance.events.exclude(value=None).order_by("at", "id")
        if e.kind in ("pending", "firing", "resolved", "inactive")
    ]


def value_chart_json(instance: AlertInstance) -> str | None:
    """The figure as a JSON <script> (json_script) that static/js/panels.js draws, or None
    when nothing was recorded. No inline script: the page's CSP forbids it."""
    points = chart_points(instance)
    if not points:
        return None
    rule = instance.rule
    times = [datetime.fromtimestamp(p[0], tz=UTC) for p in points]
    values = [p[1] for p in points]
    unit = rule.unit
    fig = go.Figure()
    # Hover text in the rule's own format ("-48.1%", "1,490 ms"), never the raw float.
    fig.add_trace(
        go.Scatter(
            x=times,
            y=values,
            mode="lines+markers",
            name="value",
            customdata=[rule.format_value(v) for v in values],
            hovertemplate="%{customdata}<extra>value</extra>",
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[times[0], times[-1]],
            y=[instance.threshold] * 2,
            mode="lines",
            name="threshold",
            line={"color": "#b42318", "dash": "dash"},
            hovertemplate=f"{rule.format_value(instance.threshold)}<extra>threshold</extra>",
        )
    )
    resolve = rule.thresholds().resolve
    if resolve != instance.threshold:
        fig.add_trace(
            go.Scatter(
                x=[times[0], times[-1]],
                y=[resolve] * 2,
                mode="lines",
                name="resolve threshold",
                line={"color": "#1e7a46", "dash": "dot"},
                hovertemplate=f"{rule.format_value(resolve)}<extra>resolve threshold</extra>",
            )
        )
    fig.update_layout(
        title=f"{rule.name}: value per evaluation",
        xaxis_title="time (UTC)",
        yaxis_title=f"value ({'%' if unit == 'ratio' else unit})",
        yaxis_tickformat=".0%" if unit == "ratio" else None,
        height=360,
        margin={"l": 60, "r": 20, "t": 50, "b": 50},
        legend={"orientation": "h", "y": -0.25},
        template="plotly_white",
    )
    return json_script(fig.to_plotly_json(), f"alert-chart-data-{instance.pk}", PlotlyJSONEncoder)
