"""Each row's estimate: which test fits the metric, its change, standard error and null.

A `Context` holds what a verdict's rows share (merged per-request samples, run-to-run spread);
the statistics themselves are `analysis.gatestats`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from analysis import gatestats, percentiles
from analysis.gate.rules import MetricRule
from analysis.gate.runs import PreparedRun
from analysis.gate.shape import check_number

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


_QUANTILE_METRIC = re.compile(r"^(?P<family>[a-z0-9]+)_p(?P<digits>\d+)_ms$")
_SHIFT_METRIC = re.compile(r"^(?P<family>[a-z0-9]+)_shift$")
_RATE_METRICS = {"qps", "output_tps", "input_tps", "total_tps"}
_TOKEN_RATE_METRICS = {"output_tps", "input_tps", "total_tps"}


@dataclass(frozen=True)
class Estimate:
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


def _tested(log_baseline: float, log_candidate: float, **fields: object) -> Estimate:
    """A tested row's estimate from the two sides' log locations (`fields`: se, df, test...)."""
    return Estimate(
        "test",
        baseline=math.exp(log_baseline),
        candidate=math.exp(log_candidate),
        log_change=log_candidate - log_baseline,
        **fields,  # type: ignore[arg-type]
    )


class Context:
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

    def estimate(self, rule: MetricRule) -> Estimate:
        parsed = _parse_quantile_metric(rule.metric)
        if parsed is not None:
            return self._quantile(rule, *parsed)
        shift = _SHIFT_METRIC.match(rule.metric)
        if shift is not None:
            return self._shift(shift["family"])
        return self._run_level(rule)

    def _shift(self, family: str) -> Estimate:
        merged = self.merged(family)
        if merged is None:
            return Estimate("missing", note="needs per-request samples in every run")
        b, c = merged
        if min(b.size, c.size) < SHIFT_MIN_REQUESTS:
            return Estimate(
                "thin",
                note=f"not enough requests ({min(b.size, c.size)}; needs {SHIFT_MIN_REQUESTS})",
            )
        shift, low, high = gatestats.hodges_lehmann(b, c)
        within = max(((high - low) / (2 * 1.959964)) ** 2, gatestats.SE_FLOOR**2)
        tau2, df = self.spread(family)
        between = tau2 * self._runs_factor()
        base_median = math.exp(float(np.median(b)))
        return Estimate(
            "test",
            baseline=base_median,
            candidate=math.exp(float(np.median(c))),
            log_change=shift,
            se=math.sqrt(within + between),
            df=gatestats.satterthwaite_df(within, between, df),
            test="Hodges-Lehmann / Mann-Whitney",
            display_change=math.expm1(shift),
        )

    def _quantile(self, rule: MetricRule, family: str, q: float) -> Estimate:
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
            return _tested(
                yb,
                yc,
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
    ) -> Estimate:
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
        return Estimate("thin", baseline=b, candidate=c, note=note, tail=min(tail_b, tail_c))

    def _run_level(self, rule: MetricRule) -> Estimate:
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
            return Estimate("missing", note=note)
        if min(b_vals + c_vals) <= 0:  # type: ignore[type-var]
            # No ratio of a zero: the thresholds decide on the recorded values.
            return Estimate(
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
            return _tested(
                mb,
                mc,
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
            return _tested(
                mb,
                mc,
                se=math.sqrt(max(pooled, gatestats.SE_FLOOR**2) * self._runs_factor()),
                df=float(df),
                test="t-test over runs",
            )
        return Estimate(
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


def _center(values: Sequence[float | None]) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def minimum_detectable_effect(
    rule: MetricRule, estimate: Estimate, baseline: float, tested: int, alpha: float
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
    check_number(f"{side}[{metric!r}]", value)
    return float(value)  # type: ignore[arg-type]
