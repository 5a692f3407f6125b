"""The fleet's charts: P99 vs SLO per service, cost vs margin, GPU-hours per day.

Points carry the dossier URL in `customdata`, so static/js/panels.js can make a click open
the service's dossier.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

import plotly.graph_objects as go

from dashboards.figures.common import (
    SERIES_COLORS,
    SLO_COLOR,
    Panel,
    add_note,
    empty_figure,
    layout,
)
from dashboards.selectors import FleetDashboard, FleetService

OK_COLOR = "#1e7a46"
BAD_COLOR = "#b42318"
NONE_COLOR = "#9aa1b1"
UNSURE_COLOR = "#b7791f"
METRIC_LABELS = {"e2e": "end-to-end", "ttft": "TTFT", "tpot": "TPOT"}


def _no_services() -> str:
    return "No services yet — create one from the fleet page."


def p99_vs_slo_figure(fleet: FleetDashboard, metric: str = "e2e", *, span: str = "") -> go.Figure:
    """One dot per service at its P99 (merged over hosts), its SLO as a red tick beside it."""
    label = METRIC_LABELS[metric]
    title = f"P99 {label} latency vs SLO{f' ({span})' if span else ''}"
    x_title = f"P99 {label} (ms)"
    if not fleet.services:
        return empty_figure(title, _no_services(), x_title=x_title)
    measured = [s for s in fleet.services if s.p99[metric].value is not None]
    if not measured:
        return empty_figure(
            title,
            "No latency from any service in this range — are agents pushing requests or"
            " engines being scraped?",
            x_title=x_title,
        )
    rows = sorted(fleet.services, key=lambda s: s.service.name.lower(), reverse=True)
    names = [s.service.name for s in rows]
    height = max(300, 170 + 34 * len(rows))
    fig = go.Figure(layout=layout(title, y_title="", x_title=x_title, height=height))
    fig.update_layout(
        yaxis={"type": "category", "rangemode": "normal"}, xaxis={"rangemode": "tozero"}
    )
    groups: dict[str, list[FleetService]] = defaultdict(list)
    for s in rows:
        if s.p99[metric].value is not None:
            groups[s.slo_status(metric)].append(s)
    styles = {
        "ok": ("P99 within SLO", OK_COLOR),
        "missed": ("P99 above SLO", BAD_COLOR),
        "unsure": ("P99 bucket holds the SLO (engine histogram)", UNSURE_COLOR),
        "no data": ("P99 (no SLO set)", NONE_COLOR),
    }
    for status, items in groups.items():
        name, color = styles[status]
        x = [s.p99[metric].value for s in items]
        fig.add_trace(
            go.Scatter(
                name=name,
                x=x,
                # A value interpolated in a wide engine-histogram bucket is drawn across it.
                error_x=_bucket_bars([s.p99[metric] for s in items], color),
                y=[s.service.name for s in items],
                customdata=[s.dossier_url for s in items],
                hovertext=[_p99_hover(s, metric) for s in items],
                hoverinfo="text",
                mode="markers",
                marker={
                    "color": color,
                    "size": 12,
                    "symbol": [
                        "circle" if s.p99[metric].sufficient else "circle-open" for s in items
                    ],
                    "line": {"color": color, "width": 2},
                },
            )
        )
    with_slo = [s for s in rows if s.service.slo_for(metric) is not None]
    if with_slo:
        fig.add_trace(
            go.Scatter(
                name="SLO (P99 target)",
                x=[s.service.slo_for(metric) for s in with_slo],
                y=[s.service.name for s in with_slo],
                customdata=[s.dossier_url for s in with_slo],
                hovertemplate="SLO %{x:g} ms<extra>%{y}</extra>",
                mode="markers",
                marker={"symbol": "line-ns-open", "size": 22, "color": SLO_COLOR, "line": {
                    "width": 3, "color": SLO_COLOR}},
            )
        )  # fmt: skip
    fig.update_yaxes(categoryorder="array", categoryarray=names)
    return fig


def _bucket_bars(ps: list, color: str) -> dict | None:
    """Asymmetric error bars from each wide-bucket value to its bucket's edges (none else)."""
    if not any(p.wide_bucket for p in ps):
        return None
    return {
        "type": "data",
        "symmetric": False,
        "array": [p.upper - p.value if p.wide_bucket else 0 for p in ps],
        "arrayminus": [p.value - p.lower if p.wide_bucket else 0 for p in ps],
        "color": color,
        "thickness": 1.5,
        "width": 6,
    }


def _p99_hover(s: FleetService, metric: str) -> str:
    p = s.p99[metric]
    where = " (engine histogram)" if p.method == "bucket-bounded" else ""
    text = f"<b>{s.service.name}</b><br>P99 {p.text()}{where}, rests on {p.count:,} requests"
    slo = s.service.slo_for(metric)
    if slo is not None:
        status = s.slo_status(metric)
        if status == "unsure":
            status = "unsure (the SLO lies inside the histogram bucket the P99 is in)"
        text += f"<br>SLO {slo:,g} ms: {status}"
    if not p.sufficient:
        text += "<br><b>insufficient data</b>"
    return text + "<br>click to open the dossier"


def cost_margin_figure(fleet: FleetDashboard, *, span: str = "") -> go.Figure:
    """Cost per Mtok (x) vs margin (y), one point per service; click opens the dossier."""
    # Live over the range; a service without live tokens is drawn at its baseline (its hover
    # says so), so the title names both.
    title = "Cost per million tokens vs margin" + (
        f" (live, {span}; else baseline)" if span else ""
    )
    x_title = "cost per Mtok (allocation basis)"
    if not fleet.services:
        return empty_figure(title, _no_services(), x_title=x_title)
    priced = [s for s in fleet.services if s.economics is not None]
    if not priced:
        return empty_figure(
            title,
            "No token rate measured and no baseline with throughput for any service, so no"
            " cost per Mtok yet.",
            x_title=x_title,
        )
    # A cost needs its unit; services priced in different currencies are not on one scale.
    currencies = sorted({s.service.currency for s in priced})
    if len(currencies) == 1:
        x_title = f"{currencies[0]} per Mtok (allocation basis)"
    else:
        x_title = "cost per Mtok, in each service's own currency (allocation basis)"
    fig = go.Figure(layout=layout(title, y_title="margin (%)", x_title=x_title))
    margins = [s.economics.margin_percent or 0.0 for s in priced]
    costs = [s.economics.cost_per_mtok for s in priced]
    # Room around the points for their labels; margins never exceed 100%.
    fig.update_layout(
        yaxis={
            "range": [min(0.0, min(margins)) - 15, max(100.0, max(margins) + 15)],
            "zeroline": True,
            "zerolinecolor": "#cdd2dc",
        },
        xaxis={"range": [0, max(costs) * 1.2]},
    )
    # Labels lean away from the plot's edges so none is cut off (a name beside x = 0 otherwise
    # loses its first letters to the axis).
    xs = [s.economics.cost_per_mtok for s in priced]
    low, high = (min(xs), max(xs)) if xs else (0.0, 1.0)
    span = (high - low) or 1.0

    def lean(x: float) -> str:
        if x - low < 0.3 * span:
            return "top right"
        return "top left" if high - x < 0.3 * span else "top center"

    for source, name, symbol in (
        ("live", "live token rate", "circle"),
        ("baseline", "current baseline (no live data)", "diamond-open"),
    ):
        items = [s for s in priced if s.economics_source == source]
        if not items:
            continue
        margins = [s.economics.margin_percent for s in items]
        fig.add_trace(
            go.Scatter(
                name=name,
                x=[s.economics.cost_per_mtok for s in items],
                y=[m if m is not None else 0 for m in margins],
                text=[s.service.name for s in items],
                textposition=[lean(s.economics.cost_per_mtok) for s in items],
                cliponaxis=False,
                customdata=[s.dossier_url for s in items],
                hovertext=[_cost_hover(s) for s in items],
                hoverinfo="text",
                mode="markers+text",
                marker={
                    "size": 13,
                    "symbol": symbol,
                    "color": [
                        BAD_COLOR if m is not None and m < 0 else SERIES_COLORS[0] for m in margins
                    ],
                },
            )
        )
    unpriced = [s.service.name for s in priced if s.economics.margin is None]
    if unpriced:
        add_note(fig, f"No price set (margin drawn at 0): {', '.join(unpriced)}")
    return fig


def _cost_hover(s: FleetService) -> str:
    e = s.economics
    cur = s.service.currency
    text = f"<b>{s.service.name}</b><br>{e.cost_per_mtok:.2f} {cur} per Mtok"
    if e.margin_percent is not None:
        text += f"<br>margin {e.margin_percent:.1f}% at {e.price_per_mtok:g} {cur}/Mtok"
    if s.economics_source == "live" and s.tokens_per_second:
        text += (
            f"<br>{s.economics_label}: {s.tokens_per_second:,.0f} tok/s"
            f" on {s.service.total_gpus} GPUs"
        )
    else:
        text += "<br>from the current baseline"
    return text + "<br>click to open the dossier"


def gpu_hours_figure(fleet: FleetDashboard) -> go.Figure:
    """GPU-hours per day, stacked by service."""
    title = "GPU-hours per day"
    if not fleet.gpu_hours:
        return empty_figure(
            title,
            "No GPU samples from any host in the last days — is an agent running with NVML access?",
            y_title="GPU-hours",
        )
    days = sorted({g.day for g in fleet.gpu_hours})
    if fleet.gpu_hours_start is not None:  # every day of the window, empty ones included
        first, last = fleet.gpu_hours_start, fleet.end.date()
        days = [first + timedelta(days=i) for i in range((last - first).days + 1)]
    by_service: dict[tuple[str, str], dict] = defaultdict(dict)
    for g in fleet.gpu_hours:
        by_service[(g.service_name, g.service_slug)][g.day] = g.gpu_hours
    fig = go.Figure(layout=layout(title, y_title="GPU-hours", x_title="day (UTC)"))
    fig.update_layout(barmode="stack", xaxis={"type": "category"})
    for i, ((name, _slug), values) in enumerate(sorted(by_service.items())):
        fig.add_trace(
            go.Bar(
                name=name,
                x=[d.isoformat() for d in days],
                y=[values.get(d, 0) for d in days],
                marker={"color": SERIES_COLORS[i % len(SERIES_COLORS)]},
                hovertemplate="%{y:.1f} GPU-hours<extra>" + name + "</extra>",
            )
        )
    return fig


def fleet_panels(fleet: FleetDashboard, *, span: str) -> list[Panel]:
    return [
        Panel("fleet-p99", p99_vs_slo_figure(fleet, "e2e", span=span)),
        Panel("fleet-cost", cost_margin_figure(fleet, span=span)),
        Panel("fleet-gpu-hours", gpu_hours_figure(fleet), wide=True),
    ]
