"""A service's GPU charts: how busy its GPUs are, and their memory."""

from __future__ import annotations

from datetime import datetime

from collectors.selectors import GpuSeriesPoint
from dashboards.figures.common import (
    SERIES_COLORS,
    add_note,
    add_time_markers,
    arr,
    empty_spec,
    figure,
    layout,
    scatter,
    times_column,
)
from dashboards.figures.service.shared import _no_samples, _x_range
from dashboards.selectors import ServiceDashboard

GB = 1024**3


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
