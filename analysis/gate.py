"""The release gate: a candidate load test vs the baseline of the same shape (DESIGN.md section 6).

A metric *regresses* when it moves the bad way by more than BOTH its relative threshold and its
absolute floor (5% and 10 ms: noise on tiny numbers must not fail a build). When both runs carry
per-request arrays for the metric's family (``"ttft"``, ``"tpot"``, ``"e2e"``, in ms), a test of
significance must agree as well:

    Bootstrap interval on the ratio candidate / baseline of the metric's own quantile (P50, P90,
    P99, ...), percentile method, ``BOOTSTRAP_RESAMPLES`` resamples from a seeded generator
    (deterministic), one-sided at ``alpha``: a P99 regression counts only when the lower bound of
    the P99 ratio is above 1.

We bootstrap the quantile rather than run Mann-Whitney U because Mann-Whitney tests a shift of the
whole distribution: it is blind to a tail-only regression, which is exactly what a P99 gate exists
to catch. A quantile needs enough requests to mean anything (``percentiles.minimum_count``: 100 for
P99); with fewer, the thresholds decide alone and the row says so.

Metrics missing on either side are "not compared", never pass or fail.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Literal

import numpy as np
from scipy import stats

from analysis import percentiles

Direction = Literal["lower", "higher"]
Verdict = Literal["pass", "regression", "improved", "not compared"]

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20240607  # fixed: the same two runs always get the same verdict
BOOTSTRAP_BATCH = 100  # resamples per vectorized batch: bounds memory on large arrays

_QUANTILE_METRIC = re.compile(r"^(?P<family>[a-z0-9]+)_p(?P<digits>\d+)_ms$")


# --- Workload shape -------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkloadShape:
    """What load a run applied. Runs of different shapes cannot be compared."""

    concurrency: int | None = None
    request_rate: float | None = None  # req/s; math.inf = "as fast as possible"
    prompt_tokens_mean: float | None = None
    output_tokens_mean: float | None = None

    def __post_init__(self) -> None:
        if self.concurrency is not None and (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise ValueError(f"concurrency must be a positive integer (got {self.concurrency!r})")
        if self.request_rate is not None:
            _check_number("request_rate", self.request_rate, allow_inf=True)
            if self.request_rate <= 0:
                raise ValueError(f"request_rate must be positive (got {self.request_rate!r})")
        for name in ("prompt_tokens_mean", "output_tokens_mean"):
            value = getattr(self, name)
            if value is not None:
                _check_number(name, value)
                if value < 0:
                    raise ValueError(f"{name} must not be negative (got {value!r})")

    @classmethod
    def from_record(cls, values: Mapping[str, object]) -> WorkloadShape:
        """Build from a run record's fields (extra keys ignored)."""
        return cls(**{f.name: values.get(f.name) for f in fields(cls)})


def shape_differences(
    baseline: WorkloadShape, candidate: WorkloadShape, *, length_tolerance: float = 0.10
) -> list[str]:
    """Why the two runs' workloads differ, one sentence each; an empty list means the same shape.

    Concurrency and request rate must match exactly; mean prompt and output lengths within
    `length_tolerance` (relative to the baseline). A field recorded on one side only is a
    difference: the gate cannot vouch for a shape it does not know.
    """
    if length_tolerance < 0:
        raise ValueError("length_tolerance must not be negative")
    reasons: list[str] = []
    if baseline.concurrency != candidate.concurrency:
        reasons.append(
            "different concurrency: baseline "
            f"{_shape_value(baseline.concurrency)}, candidate {_shape_value(candidate.concurrency)}"
        )
    b_rate, c_rate = baseline.request_rate, candidate.request_rate
    if (b_rate is None) != (c_rate is None) or (
        b_rate is not None and c_rate is not None and not math.isclose(b_rate, c_rate, rel_tol=1e-6)
    ):
        reasons.append(
            f"different request rate: baseline {_rate_text(b_rate)}, candidate {_rate_text(c_rate)}"
        )
    for name, what in (("prompt_tokens_mean", "prompt"), ("output_tokens_mean", "output")):
        b, c = getattr(baseline, name), getattr(candidate, name)
        if b is None and c is None:
            continue
        if b is None or c is None:
            reasons.append(
                f"mean {what} length recorded on one side only: baseline "
                f"{_tokens_text(b)}, candidate {_tokens_text(c)}"
            )
            continue
        differs = abs(c - b) > length_tolerance * b if b else c != 0
        if differs:
            change = f" ({(c - b) / b:+.0%})" if b else ""
            reasons.append(
                f"different mean {what} length: baseline {_tokens_text(b)}, candidate "
                f"{_tokens_text(c)}{change}, tolerance {length_tolerance:.0%}"
            )
    return reasons


def _shape_value(value: object) -> str:
    return "not recorded" if value is None else str(value)


def _rate_text(rate: float | None) -> str:
    if rate is None:
        return "not recorded"
    return "unlimited (inf)" if math.isinf(rate) else f"{rate:g} req/s"


def _tokens_text(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:g} tokens"


# --- Rules ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MetricRule:
    """How one metric is judged: which way is better, and how much worse is too much."""

    metric: str
    direction: Direction
    relative: float  # fraction of the baseline, 0.05 = 5%
    floor: float  # absolute, in `unit`
    label: str
    unit: str

    def __post_init__(self) -> None:
        if self.direction not in ("lower", "higher"):
            raise ValueError(
                f"{self.metric}: direction must be 'lower' or 'higher' (got {self.direction!r})"
            )
        for name in ("relative", "floor"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"{self.metric}: {name} must be a number >= 0 (got {value!r})")
            if math.isinf(value):
                raise ValueError(f"{self.metric}: {name} must be finite")

    @property
    def threshold_text(self) -> str:
        sign = "+" if self.direction == "lower" else "-"
        unit = f" {self.unit}" if self.unit else ""
        return f"{sign}{self.relative * 100:g}% and {sign}{self.floor:g}{unit}"


def _latency_rules() -> dict[str, MetricRule]:
    # TPOT is a per-token figure (a few ms), so its floor is smaller than TTFT's and e2e's.
    floors = {"e2e": 10.0, "ttft": 10.0, "tpot": 2.0}
    rules = {}
    for family, floor in floors.items():
        for p in ("p50", "p90", "p99"):
            metric = f"{family}_{p}_ms"
            rules[metric] = MetricRule(
                metric=metric,
                direction="lower",
                relative=0.05,
                floor=floor,
                label=f"{family.upper()} {p.upper()}",
                unit="ms",
            )
    return rules


DEFAULT_RULES: dict[str, MetricRule] = {
    **_latency_rules(),
    "qps": MetricRule("qps", "higher", 0.05, 0.1, "QPS", "req/s"),
    "output_tps": MetricRule("output_tps", "higher", 0.05, 1.0, "output tokens/s", "tok/s"),
}

_OVERRIDABLE = ("direction", "relative", "floor", "label", "unit")


def rules_with_overrides(
    overrides: Mapping[str, Mapping[str, object]],
    *,
    base: Mapping[str, MetricRule] = DEFAULT_RULES,
) -> dict[str, MetricRule]:
    """`base` with per-metric overrides, e.g. ``{"ttft_p99_ms": {"relative": 0.1}}``.

    A metric not in `base` is added, and then needs at least direction, relative and floor.
    """
    rules = dict(base)
    for metric, changes in overrides.items():
        if not isinstance(changes, Mapping):
            raise ValueError(f"overrides[{metric!r}] must be a mapping of rule fields")
        unknown = sorted(set(changes) - set(_OVERRIDABLE))
        if unknown:
            raise ValueError(
                f"overrides[{metric!r}]: unknown field(s) {', '.join(unknown)}; "
                f"allowed: {', '.join(_OVERRIDABLE)}"
            )
        if metric in rules:
            rules[metric] = replace(rules[metric], **changes)
            continue
        missing = [f for f in ("direction", "relative", "floor") if f not in changes]
        if missing:
            raise ValueError(f"overrides[{metric!r}]: a new metric needs {', '.join(missing)}")
        rules[metric] = MetricRule(
            metric=metric,
            direction=changes["direction"],  # type: ignore[arg-type]
            relative=changes["relative"],  # type: ignore[arg-type]
            floor=changes["floor"],  # type: ignore[arg-type]
            label=str(changes.get("label", metric)),
            unit=str(changes.get("unit", "")),
        )
    return rules


# --- Comparison -----------------------------------------------------------------------------


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


@dataclass(frozen=True)
class GateResult:
    rows: list[GateRow]
    passed: bool
    regressions: list[GateRow]

    @property
    def compared(self) -> int:
        return sum(1 for row in self.rows if row.verdict != "not compared")

    @property
    def summary(self) -> str:
        if self.passed:
            return f"PASS: {self.compared} metrics compared, no regression."
        worst = "; ".join(f"{row.label} {_change_text(row)}" for row in self.regressions)
        count = len(self.regressions)
        return f"FAIL: {count} regression{'s' if count > 1 else ''} ({worst})."

    def to_dict(self) -> dict:
        return {
            "passed": self.passed,
            "compared": self.compared,
            "summary": self.summary,
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
    alpha: float = 0.01,
) -> GateResult:
    """Judge every metric in `rules` (in its order); see the module docstring for the method.

    `baseline`/`candidate` are run-record values keyed by metric name (`ttft_p99_ms`, `qps`...);
    keys without a rule are ignored. `*_samples` are per-request arrays in ms keyed by family
    (`"ttft"`, `"tpot"`, `"e2e"`). Raises ValueError on a non-numeric value or when no metric
    is measured by both runs (nothing to gate on is bad input, not a pass).
    """
    if not 0 < alpha < 0.5:
        raise ValueError("alpha must be between 0 and 0.5")
    b_samples = _clean_samples("baseline_samples", baseline_samples)
    c_samples = _clean_samples("candidate_samples", candidate_samples)
    tests = _SignificanceTests(b_samples, c_samples, rules, alpha)

    rows = []
    for metric, rule in rules.items():
        b = _value("baseline", metric, baseline.get(metric))
        c = _value("candidate", metric, candidate.get(metric))
        rows.append(_judge(rule, b, c, tests))
    if all(row.verdict == "not compared" for row in rows):
        raise ValueError("Nothing to compare: no gated metric is measured by both runs.")
    regressions = [row for row in rows if row.verdict == "regression"]
    return GateResult(rows=rows, passed=not regressions, regressions=regressions)


def _judge(
    rule: MetricRule, b: float | None, c: float | None, tests: _SignificanceTests
) -> GateRow:
    row = dict(
        metric=rule.metric,
        label=rule.label,
        unit=rule.unit,
        baseline=b,
        candidate=c,
        threshold_text=rule.threshold_text,
    )
    if b is None or c is None:
        if b is None and c is None:
            note = "measured by neither run"
        else:
            note = f"not measured in {'baseline' if b is None else 'candidate'}"
        return GateRow(
            **row,
            change=None,
            relative_change=None,
            verdict="not compared",
            note=note,
        )
    change = c - b
    relative_change = change / b if b else None
    # Positive `worse` is a move the bad way, in the metric's unit.
    worse = change if rule.direction == "lower" else -change
    beyond = abs(worse) > rule.floor and abs(worse) > rule.relative * abs(b)
    if not beyond:
        note = ""
        if worse > 0 and abs(worse) > rule.relative * abs(b):
            note = f"within the {rule.floor:g} {rule.unit} floor".rstrip()
        return GateRow(
            **row, change=change, relative_change=relative_change, verdict="pass", note=note
        )
    verdict: Verdict = "regression" if worse > 0 else "improved"
    test = tests.result(rule)
    if test is None:
        return GateRow(
            **row, change=change, relative_change=relative_change, verdict=verdict, note=""
        )
    significant, text = test
    agrees = significant == ("worse" if worse > 0 else "better")
    if not agrees:
        return GateRow(
            **row,
            change=change,
            relative_change=relative_change,
            verdict="pass",
            note=f"within noise: {text}",
        )
    return GateRow(
        **row, change=change, relative_change=relative_change, verdict=verdict, note=text
    )


class _SignificanceTests:
    """Bootstrap intervals on quantile ratios, computed lazily once per family."""

    def __init__(
        self,
        baseline: dict[str, np.ndarray],
        candidate: dict[str, np.ndarray],
        rules: Mapping[str, MetricRule],
        alpha: float,
    ) -> None:
        self._baseline = baseline
        self._candidate = candidate
        self._alpha = alpha
        # Every quantile the rules ask of a family, so one bootstrap serves them all.
        self._quantiles: dict[str, list[float]] = {}
        for metric in rules:
            parsed = _parse_quantile_metric(metric)
            if parsed:
                self._quantiles.setdefault(parsed[0], []).append(parsed[1])
        self._intervals: dict[str, dict[float, tuple[float, float]]] = {}

    def result(self, rule: MetricRule) -> tuple[str, str] | None:
        """("worse"|"better"|"neither", explanation), or None when no test applies."""
        parsed = _parse_quantile_metric(rule.metric)
        if parsed is None:
            return None
        family, q = parsed
        b, c = self._baseline.get(family), self._candidate.get(family)
        if b is None or c is None:
            return None
        need = percentiles.minimum_count(q)
        if min(len(b), len(c)) < need:
            return None
        low, high = self._interval(family)[q]
        if not (math.isfinite(low) and math.isfinite(high)):
            return None  # a zero baseline quantile makes the ratio meaningless: thresholds decide
        # Ratio candidate/baseline; lower-is-better metrics regress when the ratio exceeds 1.
        if low > 1:
            outcome = "worse" if rule.direction == "lower" else "better"
        elif high < 1:
            outcome = "better" if rule.direction == "lower" else "worse"
        else:
            outcome = "neither"
        text = (
            f"{percentiles.label(q).upper()} ratio {1 - 2 * self._alpha:.0%} interval "
            f"{low:.3f}-{high:.3f} (bootstrap, n={len(b)}/{len(c)})"
        )
        return outcome, text

    def _interval(self, family: str) -> dict[float, tuple[float, float]]:
        if family not in self._intervals:
            qs = np.array(sorted(set(self._quantiles[family])))

            def ratio(cand: np.ndarray, base: np.ndarray, axis: int) -> np.ndarray:
                with np.errstate(divide="ignore", invalid="ignore"):
                    return np.quantile(cand, qs, axis=axis) / np.quantile(base, qs, axis=axis)

            # Two-sided at 1 - 2*alpha gives both one-sided bounds at alpha in one pass.
            res = stats.bootstrap(
                (self._candidate[family], self._baseline[family]),
                ratio,
                n_resamples=BOOTSTRAP_RESAMPLES,
                batch=BOOTSTRAP_BATCH,
                vectorized=True,
                paired=False,
                confidence_level=1 - 2 * self._alpha,
                method="percentile",
                rng=np.random.default_rng(BOOTSTRAP_SEED),
            )
            lows = np.atleast_1d(res.confidence_interval.low)
            highs = np.atleast_1d(res.confidence_interval.high)
            self._intervals[family] = {
                float(q): (float(lo), float(hi)) for q, lo, hi in zip(qs, lows, highs, strict=True)
            }
        return self._intervals[family]


def _parse_quantile_metric(metric: str) -> tuple[str, float] | None:
    """ "ttft_p99_ms" -> ("ttft", 0.99); "e2e_p999_ms" -> ("e2e", 0.999); "qps" -> None."""
    m = _QUANTILE_METRIC.match(metric)
    if m is None:
        return None
    return m["family"], float("0." + m["digits"])


def _value(side: str, metric: str, value: object) -> float | None:
    if value is None:
        return None
    _check_number(f"{side}[{metric!r}]", value)
    return float(value)  # type: ignore[arg-type]


def _clean_samples(
    name: str, samples: Mapping[str, Sequence[float]] | None
) -> dict[str, np.ndarray]:
    if not samples:
        return {}
    cleaned = {}
    for family, values in samples.items():
        try:
            array = np.asarray(values, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}[{family!r}] must be a sequence of numbers") from exc
        if array.ndim != 1:
            raise ValueError(f"{name}[{family!r}] must be a flat sequence of numbers")
        if not np.all(np.isfinite(array)) or np.any(array < 0):
            raise ValueError(f"{name}[{family!r}] must hold finite, non-negative numbers")
        if array.size:
            cleaned[family] = array
    return cleaned


def _check_number(name: str, value: object, *, allow_inf: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number (got {value!r})")
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a finite number (got {value!r})")


# --- Output ---------------------------------------------------------------------------------


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def _with_unit(value: float | None, unit: str) -> str:
    text = _number(value)
    return f"{text} {unit}" if value is not None and unit else text


def _change_text(row: GateRow) -> str:
    if row.change is None:
        return "-"
    sign = "+" if row.change >= 0 else "-"
    text = f"{sign}{_with_unit(abs(row.change), row.unit)}"
    if row.relative_change is not None:
        text += f" ({row.relative_change:+.1%})"
    return text


def format_table(result: GateResult) -> str:
    """Aligned plain-text table for CI logs, then a one-line verdict."""
    header = ("metric", "baseline", "candidate", "change", "threshold", "verdict", "note")
    lines = [
        (
            row.label,
            _with_unit(row.baseline, row.unit),
            _with_unit(row.candidate, row.unit),
            _change_text(row),
            row.threshold_text,
            row.verdict.upper() if row.verdict == "regression" else row.verdict,
            row.note,
        )
        for row in result.rows
    ]
    widths = [max(len(r[i]) for r in [header, *lines]) for i in range(len(header))]
    numeric = {1, 2, 3}  # right-align numbers so digits line up

    def render(cells: Sequence[str]) -> str:
        parts = [
            cell.rjust(widths[i]) if i in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(cells)
        ]
        return "  ".join(parts).rstrip()

    out = [render(header), render(["-" * w for w in widths]), *(render(r) for r in lines)]
    out.append("")
    out.append(result.summary)
    return "\n".join(out)
