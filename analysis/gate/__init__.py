"""The release gate: candidate load-test runs vs a baseline set of the same shape (docs/gate.md).

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

The package's parts, one job each: `shape` (what load a run applied), `rules` (thresholds),
`runs` (a run validated and its throughput noise measured), `estimates` (which test fits a row
and what it estimates), `verdict` (Holm across rows, thresholds, the result) and `report` (the CI
table, and the reading an experiment records). Callers import the names below from `analysis.gate`.
"""

from analysis.gate.estimates import POWER, SHIFT_MIN_REQUESTS, TAIL_REQUESTS
from analysis.gate.report import experiment_reading, format_table
from analysis.gate.rules import DEFAULT_RULES, Direction, MetricRule, rules_with_overrides
from analysis.gate.runs import PreparedRun, RunData, prepare
from analysis.gate.shape import WorkloadShape, shape_differences
from analysis.gate.verdict import ALPHA, GateResult, GateRow, Verdict, compare, compare_runs

__all__ = [
    "ALPHA",
    "DEFAULT_RULES",
    "POWER",
    "SHIFT_MIN_REQUESTS",
    "TAIL_REQUESTS",
    "Direction",
    "GateResult",
    "GateRow",
    "MetricRule",
    "PreparedRun",
    "RunData",
    "Verdict",
    "WorkloadShape",
    "compare",
    "compare_runs",
    "experiment_reading",
    "format_table",
    "prepare",
    "rules_with_overrides",
    "shape_differences",
]
