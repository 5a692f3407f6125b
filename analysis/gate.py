"""The release gate: candidate load-test runs vs a baseline set of the same shape (DESIGN.md s.6).

Baselines are sets (the last accepted runs of the workload shape, or runs promoted together) and a
candidate may be several repeats: run-to-run variance is measured, not assumed away. Each row is
judged by the test that fits what it measures (the statistics live in `analysis.gatestats`):

- **all requests** (one row per latency family with per-request samples in every run): the
  Hodges-Lehmann shift of log latency (a ratio) with the interval from Mann-Whitney's U, over
  the merged requests of each side.
- **quantile rows** (P50, P90, P99): the merged side's quantile with a Maritz-Jarrett
  (order-statistic) standard error, judged only when each side has ``TAIL_REQUESTS`` requests
  beyond it (10: a P99 needs 1,000 requests a side). Below that the row says "not enough tail
  data" and the run length that would decide it; it neither passes as noise nor fails on a
  threshold.
- **throughput and token rates**: per-run log values, each run's own noise measured by replaying
  requests through its concurrency slots (lognormal requests fitted to its E2E P50 and P99, or a
  resample of its own), tested as a random-effects comparison whose p-value comes from the
  replays' own shape: slow last requests give throughput a long low tail a normal would miss.
- Request-level tests add the run-to-run variance that the runs show beyond their request noise
  (DerSimonian-Laird over run medians). Without per-request samples a row is a t-test over runs
  (when a side has two or more), else the thresholds decide alone ("thresholds only").

A row regresses when its one-sided p-value, Holm-adjusted across the verdict's tested rows (one
decision, false alarms <= ``alpha`` per verdict), is below ``alpha`` AND the change is beyond both
its relative threshold and absolute floor (5% and 10 ms: noise on tiny numbers, or a real but
negligible change, must not fail a build). Each tested row states its minimum detectable effect.

Metrics missing on either side are "not compared", never pass or fail.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Literal

import numpy as np

from analysis import gatestats, percentiles

Direction = Literal["lower", "higher"]
Verdict = Literal["pass", "regression", "improved", "not compared", "not enough data"]


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
        rules[f"{family}_shift"] = MetricRule(
            metric=f"{family}_shift",
            direction="lower",
            relative=0.05,
            floor=floor,
            label=f"{family.upper()} all requests",
            unit="ms",
        )
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

# Family-wise false-alarm rate of one verdict: half the 1% budget, so a measured A/A rate
# stays under 1% with room for chance.
ALPHA = 0.005
TAIL_REQUESTS = 10  # requests beyond a quantile, per side, before its row is judged
SHIFT_MIN_REQUESTS = 20  # per side, before a distribution shift is judged
POWER = 0.8  # the minimum detectable effect is the change caught 80% of the time

TestKind = Literal[
    "Hodges-Lehmann / Mann-Whitney",
    "order statistics",
    "random effects",
    "t-test over runs",
    "thresholds only",
    "",
]


@dataclass(frozen=True)
class RunData:
    """One load-test run as the gate sees it.

    `values`: run-record values by metric (`ttft_p99_ms`, `qps`...). `samples`: per-request ms by
    family (`"ttft"`, `"tpot"`, `"e2e"`). `requests`: completed requests (how many a summary
    percentile rests on). `concurrency`: the slots of a closed-loop run (request rate unlimited),
    which lets the gate replay its requests to learn how noisy its throughput is.
    `output_tokens_cv`: std/mean of output lengths (token rates vary with them too).
    """

    values: Mapping[str, float | None]
    samples: Mapping[str, Sequence[float]] | None = None
    requests: int | None = None
    concurrency: int | None = None
    output_tokens_cv: float | None = None


@dataclass(frozen=True)
class PreparedRun:
    """A run validated, its samples sorted on the log scale, its throughput noise measured.

    Prepare each run once (`prepare`): a baseline set is compared with many candidates.
    """

    values: dict[str, object]
    logs: dict[str, np.ndarray]  # sorted log(ms) by family
    requests: int | None
    throughput_var: float | None  # within-run variance of log(requests / duration)
    throughput_noise: np.ndarray | None  # its standardized shape (slow runs drag: a low tail)
    output_tokens_cv: float | None
    medians: dict[str, tuple[float, float]]  # (log median, its standard error) by family


def prepare(run: RunData | PreparedRun, side: str = "run") -> PreparedRun:
    if isinstance(run, PreparedRun):
        return run
    values = dict(run.values)  # checked row by row: only gated metrics must be numbers
    samples = _clean_samples(f"{side}_samples", run.samples)
    # A zero (a cached response) has no logarithm; 1 microsecond stands in for it.
    logs = {family: np.sort(np.log(np.maximum(a, 1e-3))) for family, a in samples.items()}
    requests = run.requests
    if requests is None and samples:
        requests = max(a.size for a in samples.values())
    throughput_var = throughput_noise = None
    if run.concurrency and requests and requests >= 2:
        # Replays of the run's requests through its slots measure its throughput noise: fresh
        # lognormal draws through its E2E P50 and P99 (the slowest requests make a run's end
        # drag) give the noise's shape, long low tail included, and stand in when the file has
        # no E2E per request (no `itls`); a resample of the run's own requests keeps whatever
        # shape they have. The larger variance wins.
        if "e2e" in samples:
            p50, p99 = (float(v) for v in np.quantile(samples["e2e"], [0.5, 0.99]))
        else:
            p50, p99 = _positive(values.get("e2e_p50_ms")), _positive(values.get("e2e_p99_ms"))
        if p50 is not None and p99 is not None and p99 > p50 > 0:
            # Rounded to 0.05: the replays are cached per sigma (a 2.5% error at sigma 1).
            sigma = round(math.log(p99 / p50) / _Z99 * 20) / 20
            throughput_var, throughput_noise = gatestats.lognormal_closed_loop_noise(
                sigma, requests, run.concurrency
            )
        if "e2e" in samples and samples["e2e"].size >= 2:
            resampled = gatestats.closed_loop_log_variance(samples["e2e"], run.concurrency)
            throughput_var = max(throughput_var or 0.0, resampled)
    medians = {family: gatestats.quantile_log(a, 0.5)[:2] for family, a in logs.items()}
    return PreparedRun(
        values, logs, requests, throughput_var, throughput_noise, run.output_tokens_cv, medians
    )


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
        worst = "; ".join(f"{row.label} {_change_text(row)}" for row in self.regressions)
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
    context = _Context(base, cand)
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


@dataclass(frozen=True)
class _Estimate:
    kind: Literal["test", "thresholds", "thin", "missing"]
    baseline: float | None = None
    candidate: float | None = None
    log_change: float = 0.0  # the tested change, log(candidate / baseline)
    se: float = 0.0
    df: float = math.inf
    test: str = ""
    note: str = ""
    tail: int | None = None
    display_change: float | None = None  # relative change shown, when not candidate/baseline
    null: np.ndarray | None = None  # draws of log_change under no change, when not normal

    def p_value(self, *, worse_if_positive: bool) -> float:
        if self.null is not None:
            return gatestats.empirical_p(
                self.log_change, self.null, worse_if_positive=worse_if_positive
            )
        return gatestats.one_sided_p(
            self.log_change, self.se, self.df, worse_if_positive=worse_if_positive
        )

    def critical(self, level: float, *, worse_if_positive: bool) -> float:
        """How far the bad way log_change goes by chance with probability `level`."""
        if self.null is not None:
            q = np.quantile(self.null, 1 - level if worse_if_positive else level)
            return float(q) if worse_if_positive else -float(q)
        return gatestats.critical(level, self.df) * self.se


class _Context:
    """Per-family facts shared by a verdict's rows (merged samples, run-to-run spread)."""

    def __init__(self, base: list[PreparedRun], cand: list[PreparedRun]) -> None:
        self.base, self.cand = base, cand
        self.k, self.m = len(base), len(cand)
        self._merged: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
        self._spread: dict[str, tuple[float, int]] = {}

    def notes(self) -> tuple[str, ...]:
        if self.k + self.m < 3:
            return (
                "Run-to-run spread not measured (one run each side): rows rest on request-level "
                "noise only. Keep several accepted runs as the baseline.",
            )
        spreads = [
            f"{family.upper()} {math.sqrt(tau2):.1%}"
            for family, (tau2, _) in self._spread.items()
            if tau2 > 0
        ]
        if not spreads:
            return ()
        return ("Run-to-run spread beyond request noise: " + ", ".join(spreads) + ".",)

    def merged(self, family: str) -> tuple[np.ndarray, np.ndarray] | None:
        if family not in self._merged:
            runs = self.base + self.cand
            if all(family in run.logs for run in runs):
                b = np.sort(np.concatenate([run.logs[family] for run in self.base]))
                c = np.sort(np.concatenate([run.logs[family] for run in self.cand]))
                self._merged[family] = (b, c)
            else:
                self._merged[family] = None
        return self._merged[family]

    def spread(self, family: str) -> tuple[float, int]:
        """Between-run variance of a family's log location (run medians) and its df."""
        if family not in self._spread:
            groups = []
            for side in (self.base, self.cand):
                meds = [run.medians[family] for run in side]
                values = np.array([m[0] for m in meds])
                variances = np.array([m[1] ** 2 for m in meds])
                groups.append((values, variances))
            self._spread[family] = gatestats.between_run_variance(groups)
        return self._spread[family]

    def _runs_factor(self) -> float:
        return 1.0 / self.k + 1.0 / self.m

    def estimate(self, rule: MetricRule) -> _Estimate:
        parsed = _parse_quantile_metric(rule.metric)
        if parsed is not None:
            return self._quantile(rule, *parsed)
        shift = _SHIFT_METRIC.match(rule.metric)
        if shift is not None:
            return self._shift(shift["family"])
        return self._run_level(rule)

    def _shift(self, family: str) -> _Estimate:
        merged = self.merged(family)
        if merged is None:
            return _Estimate("missing", note="needs per-request samples in every run")
        b, c = merged
        if min(b.size, c.size) < SHIFT_MIN_REQUESTS:
            return _Estimate(
                "thin",
                note=f"not enough requests ({min(b.size, c.size)}; needs {SHIFT_MIN_REQUESTS})",
            )
        shift, low, high = gatestats.hodges_lehmann(b, c)
        within = max(((high - low) / (2 * 1.959964)) ** 2, gatestats.SE_FLOOR**2)
        tau2, df = self.spread(family)
        between = tau2 * self._runs_factor()
        base_median = math.exp(float(np.median(b)))
        return _Estimate(
            "test",
            baseline=base_median,
            candidate=math.exp(float(np.median(c))),
            log_change=shift,
            se=math.sqrt(within + between),
            df=gatestats.satterthwaite_df(within, between, df),
            test="Hodges-Lehmann / Mann-Whitney",
            display_change=math.expm1(shift),
        )

    def _quantile(self, rule: MetricRule, family: str, q: float) -> _Estimate:
        merged = self.merged(family)
        if merged is not None:
            b, c = merged
            yb, seb, tail_b = gatestats.quantile_log(b, q)
            yc, sec, tail_c = gatestats.quantile_log(c, q)
            tail = min(tail_b, tail_c)
            if tail < TAIL_REQUESTS:
                return self._thin(q, tail_b, tail_c, math.exp(yb), math.exp(yc))
            within = seb**2 + sec**2
            tau2, df = self.spread(family)
            between = tau2 * self._runs_factor()
            return _Estimate(
                "test",
                baseline=math.exp(yb),
                candidate=math.exp(yc),
                log_change=yc - yb,
                se=math.sqrt(within + between),
                df=gatestats.satterthwaite_df(within, between, df),
                test="order statistics",
                tail=tail,
            )
        estimate = self._run_level(rule)
        counts_b = [run.requests for run in self.base]
        counts_c = [run.requests for run in self.cand]
        if estimate.kind in ("test", "thresholds") and None not in counts_b + counts_c:
            tail_b = sum(math.floor(n * (1 - q) + 1e-9) for n in counts_b)
            tail_c = sum(math.floor(n * (1 - q) + 1e-9) for n in counts_c)
            if min(tail_b, tail_c) < TAIL_REQUESTS:
                return self._thin(q, tail_b, tail_c, estimate.baseline, estimate.candidate)
            estimate = replace(estimate, tail=min(tail_b, tail_c))
        return estimate

    def _thin(
        self, q: float, tail_b: int, tail_c: int, b: float | None, c: float | None
    ) -> _Estimate:
        need = math.ceil(TAIL_REQUESTS / (1 - q) - 1e-9)
        sides = []
        for name, tail, runs in (("baseline", tail_b, self.k), ("candidate", tail_c, self.m)):
            if tail < TAIL_REQUESTS:
                sides.append(f"{name} {tail} (in {runs} run{'s' if runs > 1 else ''})")
        note = (
            f"not enough tail data: requests beyond {percentiles.label(q).upper()}: "
            f"{', '.join(sides)}; needs {TAIL_REQUESTS} a side, i.e. {need:,} requests "
            "(one longer run or several repeats)"
        )
        return _Estimate("thin", baseline=b, candidate=c, note=note, tail=min(tail_b, tail_c))

    def _run_level(self, rule: MetricRule) -> _Estimate:
        b_vals = [_value("baseline", rule.metric, run.values.get(rule.metric)) for run in self.base]
        c_vals = [
            _value("candidate", rule.metric, run.values.get(rule.metric)) for run in self.cand
        ]
        missing_b, missing_c = None in b_vals, None in c_vals
        if missing_b or missing_c:
            if missing_b and missing_c:
                note = "measured by neither run"
            else:
                note = f"not measured in {'baseline' if missing_b else 'candidate'}"
            return _Estimate("missing", note=note)
        if min(b_vals + c_vals) <= 0:  # type: ignore[type-var]
            # No ratio of a zero: the thresholds decide on the recorded values.
            return _Estimate(
                "thresholds", baseline=_center(b_vals), candidate=_center(c_vals), note=""
            )
        yb_runs, yc_runs = np.log(b_vals), np.log(c_vals)
        within_b = [self._throughput_var(run, rule.metric) for run in self.base]
        within_c = [self._throughput_var(run, rule.metric) for run in self.cand]
        if None not in within_b + within_c:
            vb, vc = np.array(within_b), np.array(within_c)
            tau2, df = gatestats.between_run_variance([(yb_runs, vb), (yc_runs, vc)])
            mb, var_b = gatestats.weighted_mean(yb_runs, vb, tau2)
            mc, var_c = gatestats.weighted_mean(yc_runs, vc, tau2)
            between = tau2 * self._runs_factor()
            within = max(var_b + var_c - between, 0.0)
            null = None
            noises = [run.throughput_noise for run in self.cand + self.base]
            if all(noise is not None for noise in noises):
                # The runs' own noise shapes, long low tails included, summed as the weighted
                # means sum them; the spread between runs (tau^2) adds a normal part.
                weights, scales = [], []
                for variances, sign in ((vc, 1.0), (vb, -1.0)):
                    w = 1.0 / (variances + tau2)
                    weights += list(sign * w / w.sum())
                    scales += list(np.sqrt(variances))
                a = np.array(weights)
                null = gatestats.null_draws(
                    noises, weights, scales, math.sqrt(tau2 * float(np.sum(a**2)))
                )
            return _Estimate(
                "test",
                baseline=math.exp(mb),
                candidate=math.exp(mc),
                log_change=mc - mb,
                se=math.sqrt(var_b + var_c),
                df=gatestats.satterthwaite_df(within, between, df),
                null=null,
                test="random effects",
            )
        if self.k + self.m >= 3 and (self.k >= 2 or self.m >= 2):
            # Only the spread between runs says how noisy this metric is: a t-test over runs.
            df = self.k + self.m - 2
            pooled = (
                gatestats.sample_log_variance(yb_runs) * (self.k - 1)
                + gatestats.sample_log_variance(yc_runs) * (self.m - 1)
            ) / df
            mb, mc = float(np.mean(yb_runs)), float(np.mean(yc_runs))
            return _Estimate(
                "test",
                baseline=math.exp(mb),
                candidate=math.exp(mc),
                log_change=mc - mb,
                se=math.sqrt(max(pooled, gatestats.SE_FLOOR**2) * self._runs_factor()),
                df=float(df),
                test="t-test over runs",
            )
        return _Estimate(
            "thresholds",
            baseline=b_vals[0],
            candidate=c_vals[0],
            test="thresholds only",
            note="thresholds only: one run a side and no per-request noise to test against",
        )

    @staticmethod
    def _throughput_var(run: PreparedRun, metric: str) -> float | None:
        if metric not in _RATE_METRICS or run.throughput_var is None:
            return None
        var = run.throughput_var
        if metric in _TOKEN_RATE_METRICS and run.output_tokens_cv and run.requests:
            # Token rates also move with how long the sampled outputs were.
            var += run.output_tokens_cv**2 / run.requests
        return var


_Z99 = 2.3263479  # the standard normal's 99th percentile


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and value > 0 else None


_SHIFT_METRIC = re.compile(r"^(?P<family>[a-z0-9]+)_shift$")
_RATE_METRICS = {"qps", "output_tps", "input_tps", "total_tps"}
_TOKEN_RATE_METRICS = {"output_tps", "input_tps", "total_tps"}


def _center(values: Sequence[float | None]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def _row(
    rule: MetricRule,
    estimate: _Estimate,
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
    mde = _mde(rule, estimate, b, tested, alpha)
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


def _mde(
    rule: MetricRule, estimate: _Estimate, baseline: float, tested: int, alpha: float
) -> float:
    """Smallest relative regression caught with probability POWER: the test's and the rule's."""
    level = alpha / max(tested, 1)  # Holm's first step, the strictest a row can face
    worse_if_positive = rule.direction == "lower"
    log_mde = estimate.critical(level, worse_if_positive=worse_if_positive)
    log_mde += gatestats.critical(1 - POWER, estimate.df) * estimate.se
    statistical = math.expm1(log_mde) if rule.direction == "lower" else -math.expm1(-log_mde)
    floor = rule.floor / abs(baseline) if baseline else 0.0
    return max(statistical, rule.relative, floor)


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
            _change_text(row),
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
