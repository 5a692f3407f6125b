"""The verdict: rows tested as one decision (Holm), thresholds applied, the result assembled."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

from analysis import gatestats
from analysis.gate.estimates import Context, Estimate, minimum_detectable_effect
from analysis.gate.report import change_text
from analysis.gate.rules import DEFAULT_RULES, MetricRule
from analysis.gate.runs import PreparedRun, RunData, prepare

Verdict = Literal["pass", "regression", "improved", "not compared", "not enough data"]


# Family-wise false-alarm rate of one verdict: half the 1% budget, so a measured A/A rate
# stays under 1% with room for chance.
ALPHA = 0.005


@dataclass(frozen=True)
class GateRow:
    metric: str
    label: str
    unit: str
    baseline: float | None
    candidate: float | None
    change: float | None  # candidate - baseline
    relative_change: float | None  # change / baseline; None when either is missing or base is 0
    threshold_text: str
    verdict: Verdict
    note: str = ""
    test: str = ""  # which test judged the row ("" when none could)
    p_value: float | None = None  # one-sided, Holm-adjusted across the verdict's tested rows
    interval: tuple[float, float] | None = None  # 95% interval of the relative change
    mde: float | None = None  # smallest regression the row would catch 80% of the time
    tail: int | None = None  # requests beyond the quantile, on the thinner side


@dataclass(frozen=True)
class GateResult:
    rows: list[GateRow]
    passed: bool
    regressions: list[GateRow]
    baseline_runs: int = 1
    candidate_runs: int = 1
    alpha: float = ALPHA
    notes: tuple[str, ...] = ()

    @property
    def compared(self) -> int:
        return sum(1 for row in self.rows if row.verdict not in ("not compared", "not enough data"))

    @property
    def tested(self) -> int:
        return sum(1 for row in self.rows if row.p_value is not None)

    @property
    def summary(self) -> str:
        if self.passed:
            if not self.tested:
                return f"PASS: {self.compared} metrics compared, no regression (thresholds only)."
            return (
                f"PASS: {self.compared} metrics compared, no regression ({self.tested} tested "
                f"as one decision, false alarms <= {self.alpha:.1%})."
            )
        worst = "; ".join(f"{row.label} {change_text(row)}" for row in self.regressions)
        count = len(self.regressions)
        return f"FAIL: {count} regression{'s' if count > 1 else ''} ({worst})."

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "compared": self.compared,
            "tested": self.tested,
            "baseline_runs": self.baseline_runs,
            "candidate_runs": self.candidate_runs,
            "alpha": self.alpha,
            "summary": self.summary,
            "notes": list(self.notes),
            "regressions": [row.metric for row in self.regressions],
            "rows": [asdict(row) for row in self.rows],
        }


def compare(
    baseline: Mapping[str, float | None],
    candidate: Mapping[str, float | None],
    *,
    rules: Mapping[str, MetricRule] = DEFAULT_RULES,
    baseline_samples: Mapping[str, Sequence[float]] | None = None,
    candidate_samples: Mapping[str, Sequence[float]] | None = None,
    alpha: float = ALPHA,
) -> GateResult:
    """One baseline run against one candidate run; see `compare_runs`."""
    return compare_runs(
        [RunData(baseline, baseline_samples)],
        [RunData(candidate, candidate_samples)],
        rules=rules,
        alpha=alpha,
    )


def compare_runs(
    baseline: Sequence[RunData | PreparedRun],
    candidates: Sequence[RunData | PreparedRun],
    *,
    rules: Mapping[str, MetricRule] = DEFAULT_RULES,
    alpha: float = ALPHA,
) -> GateResult:
    """Judge a set of candidate runs against a set of baseline runs (see the module docstring).

    Raises ValueError on a non-numeric value, on an empty side, or when no metric is measured by
    both sides (nothing to gate on is bad input, not a pass).
    """
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be between 0 and 0.5")
    if not baseline or not candidates:
        raise ValueError("the gate needs at least one baseline run and one candidate run")
    base = [prepare(run, "baseline") for run in baseline]
    cand = [prepare(run, "candidate") for run in candidates]
    context = Context(base, cand)
    estimates = [context.estimate(rule) for rule in rules.values()]
    if all(e.kind == "missing" for e in estimates):
        raise ValueError("Nothing to compare: no gated metric is measured by both runs.")

    tested = [i for i, e in enumerate(estimates) if e.kind == "test"]
    directions = [rule.direction for rule in rules.values()]
    worse_p = [estimates[i].p_value(worse_if_positive=directions[i] == "lower") for i in tested]
    adjusted = dict(zip(tested, gatestats.holm(worse_p), strict=True))
    rows = [
        _row(rule, estimate, adjusted.get(i), len(tested), alpha)
        for i, (rule, estimate) in enumerate(zip(rules.values(), estimates, strict=True))
    ]
    regressions = [row for row in rows if row.verdict == "regression"]
    return GateResult(
        rows=rows,
        passed=not regressions,
        regressions=regressions,
        baseline_runs=len(base),
        candidate_runs=len(cand),
        alpha=alpha,
        notes=context.notes(),
    )


def _row(
    rule: MetricRule,
    estimate: Estimate,
    p_adjusted: float | None,
    tested: int,
    alpha: float,
) -> GateRow:
    b, c = estimate.baseline, estimate.candidate
    common = dict(
        metric=rule.metric,
        label=rule.label,
        unit=rule.unit,
        baseline=b,
        candidate=c,
        threshold_text=rule.threshold_text,
        test=estimate.test,
        tail=estimate.tail,
    )
    if estimate.kind == "missing":
        return GateRow(
            **common, change=None, relative_change=None, verdict="not compared", note=estimate.note
        )
    change = None if b is None or c is None else c - b
    relative = estimate.display_change
    if relative is None and change is not None and b:
        relative = change / b
    if estimate.display_change is not None and b is not None:
        change = b * estimate.display_change
    if estimate.kind == "thin":
        return GateRow(
            **common,
            change=change,
            relative_change=relative,
            verdict="not enough data",
            note=estimate.note,
        )
    assert b is not None and change is not None
    worse = change if rule.direction == "lower" else -change
    beyond = abs(worse) > rule.floor and abs(worse) > rule.relative * abs(b)
    if estimate.kind == "thresholds":
        verdict: Verdict = "pass" if not beyond else ("regression" if worse > 0 else "improved")
        note = estimate.note
        if not beyond and worse > 0 and abs(worse) > rule.relative * abs(b):
            note = f"within the {rule.floor:g} {rule.unit} floor".rstrip()
        return GateRow(
            **common, change=change, relative_change=relative, verdict=verdict, note=note
        )

    lower_better = rule.direction == "lower"
    z95 = 1.959964
    interval = (
        math.expm1(estimate.log_change - z95 * estimate.se),
        math.expm1(estimate.log_change + z95 * estimate.se),
    )
    mde = minimum_detectable_effect(rule, estimate, b, tested, alpha)
    p_better = estimate.p_value(worse_if_positive=not lower_better)
    significant = p_adjusted is not None and p_adjusted <= alpha
    if worse > 0 and beyond and significant:
        verdict, note = "regression", ""
    elif worse < 0 and beyond and p_better <= alpha:
        verdict, note = "improved", ""
    else:
        verdict, note = "pass", ""
        if worse > 0 and beyond:
            note = "within noise (not significant across the verdict's rows)"
        elif worse > 0 and significant:
            note = "significant but within the threshold"
    return GateRow(
        **common,
        change=change,
        relative_change=relative,
        verdict=verdict,
        note=note,
        p_value=p_adjusted,
        interval=interval,
        mde=mde,
    )
