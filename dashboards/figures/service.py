"""A service's live charts, from `collectors.selectors.service_metrics` (roll-ups only).

Each function takes the `ServiceDashboard` the selector built and returns a figure dict
(`dashboards.figures.common.figure`: plotly.js's form, never validated on the request path);
with no data it returns an empty figure whose text says why.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np

from analysis.percentiles import QUANTILE_OF, minimum_count
from collectors.selectors import GpuSeriesPoint
from core.templatetags.display import money
from dashboards.figures.common import (
    BASELINE_FILL,
    BASELINE_LINE,
    PERCENTILE_COLORS,
    SERIES_COLORS,
    SLO_COLOR,
    Panel,
    add_note,
    add_time_markers,
    arr,
    empty_spec,
    figure,
    layout,
    one_or_many,
    scatter,
    times_column,
    ts,
)
from dashboards.selectors import ServiceDashboard
from dossiers.models import Service

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
GB = 1024**3
MUTED_LINE = "#6b7385"


def _no_samples(d: ServiceDashboard) -> str:
    hosts = f" on {', '.join(d.hosts)}" if d.hosts else ""
    return (
        f"No samples from any agent{hosts} in this range — "
        f"is an agent pushing for {d.service.slug}?"
    )


def _x_range(d: ServiceDashboard) -> tuple[datetime, datetime]:
    return (d.start, d.end)


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
    fig = figure(layout(title, y_title=y_title, x_range=_x_range(d)))
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
            scatter(
                name=f"SLO: P99 ≤ {slo:g} ms",
                x=[ts(d.start), ts(d.end)],
                y=[slo, slo],
                mode="lines",
                line={"color": SLO_COLOR, "dash": "dash", "width": 1.5},
                hoverinfo="name",
            )
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


def _mean_by_time(series: list[GpuSeriesPoint], name: str) -> dict[datetime, tuple[float, int]]:
    """Mean of one GPU series per point over the GPUs reporting it, with how many did."""
    return {p.t: (p.means[name], p.counts[name]) for p in series if p.means[name] is not None}


def _no_gpu_samples(d: ServiceDashboard) -> str:
    return (
        f"No GPU samples from the hosts serving {d.service.slug} in this range — is the agent"
        " running on them with NVML (or dcgm-exporter) access?"
    )


def gpu_busy_figure(d: ServiceDashboard) -> dict:
    """ "Is the GPU really busy": GPU-Util beside SM active and DRAM bandwidth utilization.

    GPU-Util is the share of time any kernel ran; a memory-bound kernel shows 100% while the
    SMs idle, so the SM and DRAM series are what say how busy the GPU really is.
    """
    title = "Is the GPU really busy? GPU-Util vs SM active vs DRAM bandwidth"
    if not d.metrics.gpu_series:
        return empty_spec(title, _no_gpu_samples(d), y_title="% of time / capacity")
    fig = figure(layout(title, y_title="% (mean over GPUs)", x_range=_x_range(d)))
    fig["layout"]["yaxis"]["range"] = [0, 105]
    series = (
        ("util", "GPU-Util (any kernel running)", SERIES_COLORS[0], "solid"),
        ("sm_active", "SM active", SERIES_COLORS[2], "solid"),
        ("sm_occupancy", "SM occupancy", SERIES_COLORS[3], "dot"),
        ("dram_active", "DRAM bandwidth utilization", SERIES_COLORS[1], "solid"),
    )
    missing = []
    for attr, name, color, dash in series:
        means = _mean_by_time(d.metrics.gpu_series, attr)
        if not means:
            if attr != "sm_occupancy":
                missing.append(name)
            continue
        times = sorted(means)
        fig["data"].append(
            scatter(
                name=name,
                x=times_column(times),
                y=arr(means[t][0] * 100 for t in times),
                customdata=arr(means[t][1] for t in times),
                mode="lines",
                line={"color": color, "width": 2 if attr == "util" else 1.5, "dash": dash},
                hovertemplate="%{y:.0f}% (mean of %{customdata} GPUs)<extra>" + name + "</extra>",
            )
        )
    if missing:
        add_note(
            fig,
            f"{' and '.join(missing)} not reported by these GPUs (needs DCGM profiling metrics"
            " or NVML GPM on Hopper): GPU-Util alone overstates how busy the GPU is.",
        )
    add_time_markers(fig, d.markers)
    return fig


def memory_figure(d: ServiceDashboard) -> dict:
    """GPU memory used (high-water mark, % of total) and the engine's KV cache usage."""
    title = "Memory: GPU memory used and KV cache usage"
    kv = [(p.t, p.kv_cache_usage) for p in d.metrics.points if p.kv_cache_usage is not None]
    used = {
        g.t: (g.mem_used_bytes, g.mem_total_bytes, g.mem_gpus)
        for g in d.metrics.gpu_series
        if g.mem_gpus
    }
    if not kv and not used:
        reason = _no_samples(d) if not d.metrics.points else _no_gpu_samples(d)
        return empty_spec(title, reason, y_title="% used")
    fig = figure(layout(title, y_title="% used", x_range=_x_range(d)))
    fig["layout"]["yaxis"]["range"] = [0, 105]
    if used:
        times = sorted(used)
        fig["data"].append(
            scatter(
                name="GPU memory used (peak, all GPUs)",
                x=times_column(times),
                y=arr(used[t][0] / used[t][1] * 100 for t in times),
                hovertext=arr(
                    f"{used[t][0] / GB:.1f} of {used[t][1] / GB:.1f} GB on {used[t][2]} GPUs"
                    for t in times
                ),
                hoverinfo="text+x",
                mode="lines",
                line={"color": SERIES_COLORS[3], "width": 2},
            )
        )
    if kv:
        fig["data"].append(
            scatter(
                name="KV cache usage (engine)",
                x=times_column([t for t, _ in kv]),
                y=arr(v * 100 for _, v in kv),
                mode="lines",
                line={"color": SERIES_COLORS[4], "width": 2},
                hovertemplate="%{y:.0f}%<extra>KV cache</extra>",
            )
        )
    else:
        add_note(fig, "The engine reports no KV cache usage gauge (vLLM: gpu_cache_usage_perc).")
    add_time_markers(fig, d.markers)
    return fig


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
