"""A service's latency charts: percentiles over time from the merged distributions, the
baseline's band, the SLO line, and hovers that say how many values a point rests on."""

from __future__ import annotations

import numpy as np

from analysis.percentiles import QUANTILE_OF, minimum_count
from dashboards.figures.common import (
    BASELINE_FILL,
    BASELINE_LINE,
    PERCENTILE_COLORS,
    SLO_COLOR,
    add_time_markers,
    empty_spec,
    figure,
    layout,
    level_line,
    one_or_many,
    scatter,
    ts,
)
from dashboards.figures.service.shared import _no_samples, _x_range
from dashboards.selectors import ServiceDashboard

LATENCY_LABELS = {"e2e": "End-to-end latency", "ttft": "Time to first token (TTFT)"}
LATENCY_LABELS["tpot"] = "Time per output token (TPOT, per request)"
LATENCY_LABELS["itl"] = "Inter-token latency (ITL, per token gap)"
SHOWN_PERCENTILES = ("p50", "p90", "p99", "p999")
SCRAPED_HISTOGRAMS = {
    "e2e": "e2e",
    "ttft": "TTFT",
    "tpot": "per-request TPOT",
    "itl": "inter-token",
}
# What a latency's count counts: one value per request, except ITL (one per token gap).
COUNTED = {"itl": "token gaps"}
# Where a point was measured (part of the figure's identity, shown in every hover).
WHERE = {
    False: "client-side: request rows a gateway or client pushed",
    True: "server-side: the engine's histogram, from arrival at the engine",
}


def _hover_text(
    name: str, value, above, count: int, lower, upper, bounded: bool, need: int, noun: str
) -> str:
    """A percentile's hover: its value (or "above the last edge", or "below the first"), what
    it rests on, where it was measured, its bucket bounds, and whether that is too few; from
    stored columns (Python floats, NaN for none: `x != x` is the NaN test, far cheaper than
    numpy's per scalar)."""
    if value != value and above == above:
        text = f"{name.upper()} > {above:.1f} ms (above the last bucket edge)"
    elif value != value:
        text = f"{name.upper()} < {upper:.1f} ms (inside the first bucket: an upper bound)"
    else:
        text = f"{name.upper()} {value:.1f} ms"
    text += f"<br>rests on {count:,} {noun}<br>{WHERE[bool(bounded)]}"
    if bounded and lower == lower and upper == upper:
        text += f"<br>bucket-bounded: {lower:.1f} to {upper:.1f} ms"
    if count < need:
        text += f"<br><b>insufficient data</b> (needs {need:,})"
    return text


def _hover_texts(name: str, need: int, noun: str, *columns: np.ndarray) -> list[str]:
    """`_hover_text` for each point of one percentile's columns (value, above, count, lower,
    upper, bounded); the common point (a value from enough requests, not bucket-bounded)
    formatted inline: a month of points per trace, twelve traces a page."""
    head = name.upper()
    out = []
    for point in zip(*(c.tolist() for c in columns), strict=True):
        value, above, count, lower, upper, bounded = point
        if value == value and not bounded and count >= need:
            out.append(f"{head} {value:.1f} ms<br>rests on {count:,} {noun}<br>{WHERE[False]}")
        elif value == value or above == above or (lower == 0 and upper == upper):
            out.append(_hover_text(name, *point, need, noun))
        else:
            out.append("no data")
    return out


def _vantage(p50) -> str:
    """Where the chart's points were measured, for its title (`WHERE` says it per point): the
    client's clock and the engine's histograms are different quantities."""
    drawn = ~np.isnan(p50.value) | ~np.isnan(p50.above_last_edge) | ~np.isnan(p50.upper)
    engine = p50.is_method("bucket-bounded")[drawn]
    if engine.all():
        return "server-side (the engine's histograms)"
    if not engine.any():
        return "client-side (pushed request rows)"
    return "client- and server-side points (each point's hover says which)"


def latency_figure(d: ServiceDashboard, metric: str) -> dict:
    """P50, P90, P99, P999 of `metric` over time, with the SLO line and the baseline band.

    Percentiles come merged per point (never averaged); each point's hover names the request
    count it rests on, and points below the minimum count are drawn as open markers.
    """
    title = f"{LATENCY_LABELS[metric]}, percentiles"
    y_title = f"{metric.upper() if metric != 'e2e' else 'end-to-end'} (ms)"
    if not d.metrics.points:
        return empty_spec(title, _no_samples(d), y_title=y_title)
    # Columns, not per-point objects: the stored quantiles as one array per metric
    # [point, quantile, field] and the times as one datetime64 array (a month of points).
    x = d.metrics.x_array
    cols = d.metrics.quantile_columns(metric)
    p50 = cols.at("p50")
    if not np.any(
        ~np.isnan(p50.value)
        | (np.nan_to_num(p50.above_last_edge) > 0)
        | (np.nan_to_num(p50.upper) > 0)
    ):
        pushed = (
            "pushed request rows carry no token gaps"
            if metric == "itl"
            else "agents pushed no request timings"
        )
        return empty_spec(
            title,
            f"Traffic arrived, but no {metric.upper()} latency: {pushed}"
            f" and the engine's /metrics has no {SCRAPED_HISTOGRAMS[metric]} histogram.",
            y_title=y_title,
        )
    fig = figure(layout(f"{title}: live, {_vantage(p50)}", y_title=y_title, x_range=_x_range(d)))
    _add_baseline_band(fig, d, metric)
    any_insufficient = False
    for name in SHOWN_PERCENTILES:
        need = minimum_count(QUANTILE_OF[name])
        at = cols.at(name)
        v, a, n = at.value, at.above_last_edge, np.nan_to_num(at.count).astype(int)
        lo, hi, is_bounded = at.lower, at.upper, at.is_method("bucket-bounded")
        over_edge = np.isnan(v) & ~np.isnan(a)
        # Inside the first bucket: drawn at its edge, pointing down (an upper bound).
        under_edge = np.isnan(v) & np.isnan(a) & (lo == 0) & ~np.isnan(hi)
        y = np.where(over_edge, a, np.where(under_edge, hi, v))
        enough = n >= need
        if name == "p99":
            any_insufficient = bool(np.any(~enough & ~np.isnan(v)))
        symbols = np.where(
            over_edge,
            "triangle-up-open",
            np.where(under_edge, "triangle-down-open", np.where(enough, "circle", "circle-open")),
        )
        hover = _hover_texts(
            name, need, COUNTED.get(metric, "requests"), v, a, n, lo, hi, is_bounded
        )
        fig["data"].append(
            scatter(
                name=name.upper(),
                x=x,
                y=y,
                mode="lines+markers",
                line={"color": PERCENTILE_COLORS[name], "width": 2 if name == "p99" else 1.5},
                marker={"symbol": one_or_many(symbols.tolist()), "size": 5},
                hovertext=hover,
                hoverinfo="text+x",
                connectgaps=False,
            )
        )
    slo = d.service.slo_for(metric)
    if slo is not None:
        fig["data"].append(
            level_line(f"SLO: P99 ≤ {slo:,g} ms", d.start, d.end, slo, color=SLO_COLOR)
        )
    if any_insufficient:
        fig["data"].append(
            scatter(
                name="open marker: too few requests",
                x=[None],
                y=[None],
                mode="markers",
                marker={"symbol": "circle-open", "color": "#6b7385", "size": 8},
                hoverinfo="skip",
            )
        )
    add_time_markers(fig, d.markers)
    return fig


def _add_baseline_band(fig: dict, d: ServiceDashboard, metric: str) -> None:
    """The current baseline's P50..P99 as a shaded band: where the service lived when measured."""
    b = d.baseline
    if b is None:
        return
    low, high = b.latency(metric, "p50"), b.latency(metric, "p99")
    if high is None:
        return
    low = high if low is None else low
    x = [ts(d.start), ts(d.end)]
    fig["data"].append(
        scatter(
            x=x,
            y=[low, low],
            mode="lines",
            line={"width": 0},
            hoverinfo="skip",
            showlegend=False,
            legendgroup="baseline",
            name="baseline P50",
        )
    )
    fig["data"].append(
        scatter(
            name=f"Baseline P50 to P99 ({b.label})",
            x=x,
            y=[high, high],
            mode="lines",
            fill="tonexty",
            fillcolor=BASELINE_FILL,
            line={"color": BASELINE_LINE, "width": 1},
            legendgroup="baseline",
            hovertext=f"baseline {b.label}: P50 {low:.1f} ms, P99 {high:.1f} ms",
            hoverinfo="text",
        )
    )
