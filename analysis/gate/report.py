"""The gate's verdict as a plain-text table for CI logs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from analysis import readable
from analysis.gate.estimates import POWER

if TYPE_CHECKING:
    from analysis.gate.verdict import GateResult, GateRow


def _number(value: float | None) -> str:
    # The pages' rule (analysis.readable), so the CI table and the gate run page agree.
    return "-" if value is None else readable.measured(value)


def _with_unit(value: float | None, unit: str) -> str:
    text = _number(value)
    return f"{text} {unit}" if value is not None and unit else text


def change_text(row: GateRow) -> str:
    if row.change is None:
        return "-"
    sign = "+" if row.change >= 0 else "-"
    text = f"{sign}{_with_unit(abs(row.change), row.unit)}"
    if row.relative_change is not None:
        text += f" ({row.relative_change:+.1%})"
    return text


def _interval_text(row: GateRow) -> str:
    if row.interval is None:
        return "-"
    return f"{row.interval[0]:+.1%}..{row.interval[1]:+.1%}"


def _mde_text(row: GateRow) -> str:
    if row.mde is None:
        return "-"
    rule_sign = "+" if row.threshold_text.startswith("+") else "-"
    return f"{rule_sign}{row.mde:.1%}"


def _p_text(row: GateRow) -> str:
    if row.p_value is None:
        return "-"
    return "<0.0001" if row.p_value < 1e-4 else f"{row.p_value:.4f}"


def format_table(result: GateResult) -> str:
    """Aligned plain-text table for CI logs, then notes and a one-line verdict."""
    header = (
        "metric",
        "baseline",
        "candidate",
        "change",
        "95% interval",
        "threshold",
        "test",
        "p (Holm)",
        "MDE",
        "verdict",
        "note",
    )
    lines = [
        (
            row.label,
            _with_unit(row.baseline, row.unit),
            _with_unit(row.candidate, row.unit),
            change_text(row),
            _interval_text(row),
            row.threshold_text,
            row.test or "-",
            _p_text(row),
            _mde_text(row),
            row.verdict.upper() if row.verdict == "regression" else row.verdict,
            row.note,
        )
        for row in result.rows
    ]
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    numeric = {1, 2, 3, 4, 7, 8}  # right-align numbers so digits line up

    def render(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    out = [render(header), render(["-" * w for w in widths]), *(render(r) for r in lines)]
    out.append("")
    out.append(
        f"{result.baseline_runs} baseline run{'s' if result.baseline_runs > 1 else ''} vs "
        f"{result.candidate_runs} candidate run{'s' if result.candidate_runs > 1 else ''}; "
        f"p: one-sided, Holm-adjusted over the {result.tested} tested rows; MDE: the smallest "
        f"regression a row catches {POWER:.0%} of the time (the test's and the threshold's)."
    )
    out.extend(result.notes)
    out.append(result.summary)
    return "\n".join(out)


def experiment_reading(result: GateResult) -> str:
    """The comparison as an experiment's record reads it: what got better and what worse beyond
    the noise (an experiment's gain matters as much as its price), then how much the runs could
    tell. One paragraph, for the experiment's notes."""
    runs = (
        f"{result.baseline_runs} run{'s' if result.baseline_runs > 1 else ''} before and "
        f"{result.candidate_runs} after"
    )
    parts = []
    for verdict, word in (("improved", "Better"), ("regression", "Worse")):
        rows = [row for row in result.rows if row.verdict == verdict]
        if rows:
            parts.append(f"{word}: " + "; ".join(f"{r.label} {change_text(r)}" for r in rows))
    unchanged = sum(1 for row in result.rows if row.verdict == "pass")
    if unchanged:
        parts.append(
            f"No change these runs can tell: {unchanged} figure{'s' if unchanged > 1 else ''}"
        )
    short = [row.label for row in result.rows if row.verdict == "not enough data"]
    if short:
        parts.append("Too few requests to judge: " + ", ".join(short))
    if not parts:
        parts.append("No figure measured on both sides could be compared")
    if not result.tested:
        basis = "judged by the rows' thresholds alone (no noise measured to test against)"
    else:
        basis = f"beyond the measured noise (false alarms <= {result.alpha:.1%} a verdict)"
    return f"The release gate, {runs}, {basis}: " + ". ".join(parts) + "."
