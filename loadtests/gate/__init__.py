"""The release gate over stored runs: which baseline a candidate meets, and the stored verdict.

The comparison itself is `analysis.gate` (per-row tests, Holm across rows, thresholds and
floors). This module picks the baseline set of the candidates' workload (baselines whose
fingerprint is compatible, `analysis.fingerprint`, within the anchor's regime: no config change
or step between them, at most `BASELINE_WINDOW`), feeds the gate per-request samples rebuilt
from stored sketches, applies the service's overrides, notes the lint findings of both sides
and keeps every run as a GateRun.

Samples from sketches: a load test keeps its per-request arrays only as DDSketches, so the
tests get each bin's representative value repeated by the bin's count. Every value is then
within the sketch's 1.08% relative accuracy of a real request, the quantiles are the sketch's
own, and the same sketch always yields the same samples (an identical rerun compares equal).

One module a job: `stored_runs` (shapes, fingerprints, samples of a stored run), `reference`
(the baseline set), `run` (judging and storing the GateRun). Everything is re-exported here.
"""

from loadtests.gate.reference import (
    BASELINE_WINDOW,
    Match,
    RegimeBreak,
    current_reference,
    match_baseline,
    match_baselines,
    reference_leavers,
    regime_boundary,
    regime_set,
)
from loadtests.gate.run import GateInputError, lint_notes, run_gate, service_rules
from loadtests.gate.stored_runs import (
    SAMPLE_FAMILIES,
    approximate_values,
    fingerprint_of,
    run_data,
    samples_of,
    shape_of,
    shape_text,
    workload_differences,
)

__all__ = [
    "BASELINE_WINDOW",
    "SAMPLE_FAMILIES",
    "GateInputError",
    "Match",
    "RegimeBreak",
    "approximate_values",
    "current_reference",
    "fingerprint_of",
    "lint_notes",
    "match_baseline",
    "match_baselines",
    "reference_leavers",
    "regime_boundary",
    "regime_set",
    "run_data",
    "run_gate",
    "samples_of",
    "service_rules",
    "shape_of",
    "shape_text",
    "workload_differences",
]
