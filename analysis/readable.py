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
