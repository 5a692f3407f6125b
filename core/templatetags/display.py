"""Formatting for dossier pages: numbers people can read, units stated once in headers."""

from __future__ import annotations

import functools

from django import template
from django.utils.html import format_html
from django.utils.http import urlencode

from analysis import readable
from core.labels import FIELD_LABELS

register = template.Library()

DASH = "—"

RATIO_METRICS = {"gpu_util", "sm_active", "dram_active"}


def _missing(value) -> bool:
    # A template resolving an attribute of None hands filters "" (string_if_invalid).
    return value is None or value == ""


def _or_dash(fmt):
    """A filter showing DASH for a missing value and `fmt(value, ...)` for any other."""

    @functools.wraps(fmt)  # Django reads the arguments through __wrapped__
    def shown(value, *args):
        return DASH if _missing(value) else fmt(value, *args)

    return shown


@register.filter
@_or_dash
def ms(value: float | None) -> str:
    """Milliseconds with precision that fits the size: 1,840 / 42.5 / 8.31."""
    return readable.measured(value)


@register.filter
@_or_dash
def span(value: float | None) -> str:
    """Seconds of configuration (a window, an interval) as "3 d", "15 min": `readable.span`."""
    return readable.span(float(value))


@register.filter
def quantity(value: float | None) -> str:
    """A number that is a count when whole (4 replicas, 2,922 GPU-hours) and a measurement
    otherwise (35.8 concurrent requests, 4.49 req/s): `readable.setting`; DASH when missing."""
    return DASH if _missing(value) else readable.setting(value)


@register.filter
def measured(value: float | None, unit: str = "") -> str:
    """A measured figure in any unit, as `ms` shows milliseconds, with its unit; DASH alone
    when missing (never "— ms")."""
    if _missing(value):
        return DASH
    return f"{readable.measured(value)} {unit}" if unit else readable.measured(value)


@register.filter
def pct_ms(p) -> str:
    """A percentile in ms as `ms` shows a value, or the bucket edge it is known to be below
    ("< 300", inside the first bucket) or above ("> 10,000", in +Inf); never a guess."""
    return DASH if _missing(p) else p.shown(ms, DASH)


@register.filter
@_or_dash
def num(value: float | int | None, digits: int = 1) -> str:
    # Judged after rounding: 1727.9999999999998 (float noise) reads "1,728", like 1728.0.
    value = round(float(value), int(digits))
    if value.is_integer():
        return f"{int(value):,}"
    return f"{value:,.{int(digits)}f}"


@register.filter
@_or_dash
def fixed(value: float | int | None, digits: int = 0) -> str:
    """Exactly `digits` decimals, thousands separated: for a column of a table, where `ms` and
    `num` would vary the decimals row by row with each value's size ("5,200" above "61.0")."""
    return f"{float(value):,.{int(digits)}f}"


# One format each, DASH for a missing value. A 0-1 ratio as a whole percentage; a fraction
# (e.g. a margin) as a percentage with one decimal.
ratio = register.filter("ratio", _or_dash(lambda value: f"{value * 100:.0f}%"))
percent = register.filter("percent", _or_dash(lambda value: f"{value * 100:.1f}%"))


@register.filter
@_or_dash
def money(value: float | None) -> str:
    value = float(value)
    return f"{value:,.2f}" if abs(value) >= 0.1 else f"{value:,.4f}"


# Bytes in decimal GB (the seed's KV cache example: 21,474,836,480 bytes -> 21.5 GB).
gigabytes = register.filter("gigabytes", _or_dash(lambda value: f"{value / 1e9:,.1f} GB"))


@register.filter
@_or_dash
def signed_percent(value: float) -> str:
    """A signed share: "+14.1%", "-3.9%", and "±0.0%" for what rounds to zero (never "-0.0%")."""
    shown = round(float(value) * 100, 1)
    return "±0.0%" if shown == 0 else f"{shown:+.1f}%"


METRIC_UNITS = {"qps": "req/s", "output_tps": "tok/s", "input_tps": "tok/s"}


@register.filter
def signed_change(delta) -> str:
    """An experiment's change in the metric's own unit: "-7,250 ms", "+19.2 tok/s", "+3 pts"."""
    change = delta.after - delta.before
    sign = "+" if change > 0 else "-" if change < 0 else "±"
    size = abs(change)
    if delta.metric in RATIO_METRICS:
        return f"{sign}{size * 100:.0f} pts"
    if delta.metric.endswith("_ms"):
        return f"{sign}{ms(size)} ms"
    unit = METRIC_UNITS.get(delta.metric, "")
    return f"{sign}{num(size)} {unit}".rstrip()


@register.filter
def change_with_percent(delta) -> str:
    """The change in units with the relative change beside it: "-7,250 ms (-86.3%)"."""
    if delta.relative is None:
        return signed_change(delta)
    return f"{signed_change(delta)} ({signed_percent(delta.relative)})"


@register.filter
@_or_dash
def figure(value: float | None, unit: str) -> str:
    """A figure in its unit as every page shows it: "1,840 ms", "2,010 tok/s", "97%", "1.39"."""
    if unit == "ms":
        return f"{ms(value)} ms"
    if unit == "ratio":
        return percent(value)
    if unit == "money":
        return money(value)
    return f"{num(value, 0)} {unit}"


@register.filter
def metric_label(name: str) -> str:
    return FIELD_LABELS.get(name, name)


@register.filter
def metric_value(value: float | None, name: str) -> str:
    if name in RATIO_METRICS:
        return ratio(value)
    if name.endswith("_ms"):
        return ms(value)
    return num(value)


@register.filter
def margin_class(value: float | None) -> str:
    if _missing(value):
        return ""
    return "neg" if value < 0 else "low" if value < 0.2 else "pos"


@register.simple_tag
def slo_badge(status: str) -> str:
    css = {"ok": "ok", "missed": "bad"}.get(status, "none")
    text = {"ok": "SLO met", "missed": "SLO missed"}.get(status, "no data")
    return format_html('<span class="badge badge-{}">{}</span>', css, text)


@register.simple_tag
def status_badge(value: str, label: str = "") -> str:
    """A badge for a bottleneck status or an experiment verdict."""
    css = {
        "suspected": "warn",
        "confirmed": "bad",
        "mitigated": "ok",
        "wont_fix": "none",
        "adopted": "ok",
        "reverted": "bad",
        "inconclusive": "warn",
        "pending": "none",
        # claims against live data (dashboards.claims)
        "holds": "ok",
        "drifted": "bad",
        "not representative": "bad",
        "stale": "warn",
    }.get(value, "none")
    return format_html('<span class="badge badge-{}">{}</span>', css, label or value)


@register.simple_tag(takes_context=True)
def sort_header(context, key: str, label: str, numeric: bool = False) -> str:
    """A fleet column header that sorts by `key`, toggling direction, keeping the search."""
    current = context.get("sort", "name")
    q = context.get("q", "")
    active = current.lstrip("-") == key
    descending = current.startswith("-")
    target = f"-{key}" if active and not descending else key
    params = {"sort": target}
    if q:
        params["q"] = q
    arrow = (" ↓" if descending else " ↑") if active else ""
    aria = ("descending" if descending else "ascending") if active else "none"
    return format_html(
        '<th scope="col" class="{}" aria-sort="{}"><a href="?{}">{}{}</a></th>',
        "num" if numeric else "",
        aria,
        urlencode(params),
        label,
        arrow,
    )


@register.filter
def delta_tables(deltas) -> dict:
    """Shape an experiment's deltas for reading: a latency grid (metric x percentile, as the
    relative change) and the other metrics (throughput, utilization) as before/after rows."""
    by_name = {d.metric: d for d in deltas}
    latency = []
    for metric, label in (("e2e", "E2E"), ("ttft", "TTFT"), ("tpot", "TPOT")):
        cells = [by_name.get(f"{metric}_{p}_ms") for p in ("p50", "p90", "p95", "p99", "p999")]
        if any(cells):
            latency.append((label, cells))
    other = [d for d in deltas if not d.metric.endswith("_ms")]
    return {"latency": latency, "other": other}
