"""A service's usage charts: its traffic (requests and tokens per second), its GPUs (how busy,
and their memory), and what the traffic costs against its price (economics)."""

from __future__ import annotations

from datetime import datetime

from collectors.exposition.engines import measured_by
from collectors.selectors import GpuSeriesPoint
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
    level_line,
    line,
    times_column,
)
from dashboards.figures.service.shared import _no_samples, _x_range
from dashboards.selectors import ServiceDashboard
from dossiers.models import Service

GB = 1024**3
MUTED_LINE = "#6b7385"


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
        line(
            "QPS (requests/s)",
            x,
            arr(p.qps for p in points),
            color=SERIES_COLORS[0],
            width=2,
            hovertemplate="%{y:.2f} req/s<extra>QPS</extra>",
        )
    )
    fig["data"].append(
        line(
            "generated tokens/s",
            x,
            arr(p.generation_tps for p in points),
            color=SERIES_COLORS[1],
            yaxis="y2",
            hovertemplate="%{y:,.0f} tok/s<extra>generated</extra>",
        )
    )
    if any(p.prompt_tps is not None for p in points):
        fig["data"].append(
            line(
                "prompt tokens/s",
                x,
                arr(p.prompt_tps for p in points),
                color=SERIES_COLORS[2],
                dash="dot",
                yaxis="y2",
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
            line(
                name,
                times_column(times),
                arr(means[t][0] * 100 for t in times),
                color=color,
                width=2 if attr == "util" else 1.5,
                dash=dash,
                customdata=arr(means[t][1] for t in times),
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
            line(
                "GPU memory used (peak, all GPUs)",
                times_column(times),
                arr(used[t][0] / used[t][1] * 100 for t in times),
                color=SERIES_COLORS[3],
                width=2,
                hovertext=arr(
                    f"{used[t][0] / GB:.1f} of {used[t][1] / GB:.1f} GB on {used[t][2]} GPUs"
                    for t in times
                ),
                hoverinfo="text+x",
            )
        )
    if kv:
        fig["data"].append(
            line(
                "KV cache usage (engine)",
                times_column([t for t, _ in kv]),
                arr(v * 100 for _, v in kv),
                color=SERIES_COLORS[4],
                width=2,
                hovertemplate="%{y:.0f}%<extra>KV cache</extra>",
            )
        )
    else:
        # Named for the service's engine from its mapping table, never vLLM's name on TGI.
        source = measured_by(d.service.engine, ("kv_cache_usage",))
        add_note(fig, f"No KV cache usage gauge in this range: {source or 'no engine mapping'}.")
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
        reason = (
            _no_samples(d)
            if not d.metrics.points
            else (
                "No token rate in this range, so no cost per Mtok: the engine's /metrics has no"
                " generation token counter and agents pushed no output token counts."
            )
        )
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
        line(
            "cost per Mtok",
            x,
            arr(e.cost_per_mtok for e in econ),
            color=SERIES_COLORS[0],
            width=2,
            customdata=arr(round(tps) for _, tps in rows),
            hovertemplate=f"%{{y:.2f}} {service.currency} at %{{customdata:,}} tok/s on {gpus}"
            " GPUs<extra>cost per Mtok</extra>",
        )
    )
    if price:
        fig["data"].append(
            level_line(
                f"price charged ({price:g} {service.currency}/Mtok)",
                d.start,
                d.end,
                price,
                color=MUTED_LINE,
            )
        )
        fig["data"].append(
            line(
                "margin (%)",
                x,
                arr(e.margin_percent for e in econ),
                color=SERIES_COLORS[1],
                yaxis="y2",
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
            level_line(
                f"baseline cost ({money(base.cost_per_mtok)} {service.currency}/Mtok)",
                d.start,
                d.end,
                base.cost_per_mtok,
                color=BASELINE_LINE,
                dash="dot",
            )
        )
    add_time_markers(fig, d.markers)
    return fig
