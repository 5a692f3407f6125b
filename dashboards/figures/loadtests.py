"""Baseline vs candidate load test: percentiles side by side, and per-request histograms.

Histograms come from the runs' DDSketches (`LoadTestSketch`), drawn on a log axis with the
sketch's own logarithmic bins merged eight at a time (8/32 of a doubling per step), as a
share of requests so runs of different sizes compare.
"""

from __future__ import annotations

from collections import defaultdict

import plotly.graph_objects as go

from dashboards.figures.common import Panel, add_note, empty_figure, layout
from dashboards.selectors import LoadTestComparison, RunSide

BASELINE_COLOR = "#1e7a46"
CANDIDATE_COLOR = "#2f5bd3"
METRIC_LABELS = {"e2e": "End-to-end", "ttft": "TTFT", "tpot": "TPOT"}
PERCENTILES = ("p50", "p90", "p95", "p99", "p999")
BINS_PER_STEP = 8


def percentiles_figure(c: LoadTestComparison, metric: str) -> go.Figure:
    """Grouped bars: P50..P999 of `metric`, baseline beside candidate."""
    title = f"{METRIC_LABELS[metric]} latency percentiles: baseline vs candidate"
    y_title = f"{METRIC_LABELS[metric]} (ms)"
    sides = [(c.baseline, BASELINE_COLOR), (c.candidate, CANDIDATE_COLOR)]
    if all(all(side.run.latency(metric, p) is None for p in PERCENTILES) for side, _ in sides):
        return empty_figure(
            title,
            f"Neither run recorded {METRIC_LABELS[metric]} percentiles"
            " (the tool's result file has no such field).",
            y_title=y_title,
        )
    fig = go.Figure(layout=layout(title, y_title=y_title, x_title="percentile", height=320))
    fig.update_layout(barmode="group", xaxis={"type": "category"})
    for side, color in sides:
        values = [side.run.latency(metric, p) for p in PERCENTILES]
        count = side.run.request_count
        fig.add_trace(
            go.Bar(
                name=f"{side.role}: {side.label}",
                x=[p.upper() for p in PERCENTILES],
                y=values,
                marker={"color": color},
                text=[f"{v:.0f}" if v is not None else "n/a" for v in values],
                textposition="outside",
                hovertemplate="%{x} %{y:.1f} ms"
                + (f"<br>{count:,} requests" if count else "")
                + f"<extra>{side.role}</extra>",
            )
        )
    return fig


def _histogram(side: RunSide, family: str) -> tuple[list[float], list[float]] | None:
    sketch = side.sketches.get(family)
    if sketch is None or not sketch.count:
        return None
    mapping, store = sketch._mapping, sketch._store
    shares: dict[int, float] = defaultdict(float)
    for i, n in enumerate(store.bins):
        if n:
            shares[(store.offset + i) // BINS_PER_STEP] += n / sketch.count
    a = mapping.relative_accuracy
    # Left edge of a coarse bin: the lower bound of its first sketch key.
    edges = [mapping.value(g * BINS_PER_STEP) / (1 + a) for g in sorted(shares)]
    return edges, [shares[g] * 100 for g in sorted(shares)]


def histogram_figure(c: LoadTestComparison, family: str) -> go.Figure:
    """Per-request distributions of `family` as step histograms on a log axis."""
    label = METRIC_LABELS.get(family, family.upper())
    title = f"{label} per-request distribution: baseline vs candidate"
    x_title = f"{label} (ms, log scale)"
    sides = [(c.baseline, BASELINE_COLOR), (c.candidate, CANDIDATE_COLOR)]
    data = [(side, color, _histogram(side, family)) for side, color in sides]
    if all(h is None for _, _, h in data):
        return empty_figure(
            title,
            "Neither run kept per-request values (only the tool's summary percentiles).",
            x_title=x_title,
        )
    fig = go.Figure(layout=layout(title, y_title="% of requests", x_title=x_title, height=320))
    fig.update_layout(xaxis={"type": "log"}, hovermode="x unified")
    for side, color, hist in data:
        if hist is None:
            continue
        edges, shares = hist
        count = round(side.sketches[family].count)
        fig.add_trace(
            go.Scatter(
                name=f"{side.role}: {side.label} ({count:,} requests)",
                x=edges,
                y=shares,
                mode="lines",
                line={"shape": "hv", "color": color, "width": 1.5},
                fill="tozeroy",
                opacity=0.6,
                hovertemplate="from %{x:.1f} ms: %{y:.1f}%<extra>" + side.role + "</extra>",
            )
        )
    missing = [side.role for side, _, h in data if h is None]
    if missing:
        add_note(fig, f"No per-request values for the {' or '.join(missing)}.")
    return fig


def comparison_panels(c: LoadTestComparison) -> list[Panel]:
    panels = [Panel(f"compare-{m}", percentiles_figure(c, m)) for m in ("e2e", "ttft", "tpot")]
    families = sorted(set(c.baseline.sketches) | set(c.candidate.sketches))
    panels += [Panel(f"histogram-{f}", histogram_figure(c, f)) for f in families]
    return panels
