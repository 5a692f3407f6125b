"""Numbers as the pages print them, for text made outside templates (diagnosis evidence):
precision that fits the size, thousands separated. No Django: the analysis package uses it,
and `core.templatetags.display.ms` is this same rule."""

from __future__ import annotations


def measured(value: float) -> str:
    """A measured figure: 1,840 / 42.5 / 8.31 (never "1.84e+06", never six digits of noise)."""
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def setting(value: float) -> str:
    """A configured number (a batch size, a concurrency): exact, thousands separated, no
    trailing ".0"; a fractional one as `measured`."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return measured(value)


SPAN_UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))


def span(seconds: float) -> str:
    """A configured length of time in the largest units it divides into, at most two:
    259200 -> "3 d", 5400 -> "1 h 30 min", 90 -> "1 min 30 s", 0 -> "0 s"."""
    left = round(seconds)
    if left <= 0:
        return "0 s"
    parts = []
    for size, unit in SPAN_UNITS:
        if left >= size:
            parts.append(f"{left // size:,} {unit}")
            left %= size
    return " ".join(parts[:2]) if len(parts) <= 2 else _span_rounded(seconds)


def _span_rounded(seconds: float) -> str:
    # Three units or more ("1 d 2 h 3 min 4 s") read worse than a rounded two.
    for size, unit in SPAN_UNITS[:-1]:
        if seconds >= size:
            whole, rest = divmod(round(seconds), size)
            smaller, name = next((s, u) for s, u in SPAN_UNITS if s < size)
            return f"{whole:,} {unit} {round(rest / smaller):,} {name}"
    return f"{round(seconds)} s"
