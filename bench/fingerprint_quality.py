"""How often the workload fingerprint refuses two runs of one workload, and how often it tells
apart two workloads with one mean (which the old "means within 10%" rule let through).

Runs draw prompt and output lengths per request: realistic lengths are lognormal (prompt median
512, sigma 0.5; output median 200, sigma 0.6, roughly ShareGPT's shape), fixed lengths are one
value. Each trial builds two runs' fingerprints from their per-request lengths (what vLLM's
`input_lens` / `output_lens` give) and asks `analysis.fingerprint.differences`.

    .venv/bin/python bench/fingerprint_quality.py
"""

from __future__ import annotations

import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from analysis import gate
from analysis.fingerprint import Fingerprint, Lengths, differences

TRIALS = 2000


def fingerprint(prompts, outputs) -> Fingerprint:
    return Fingerprint(
        prompt=Lengths.from_values(prompts),
        output=Lengths.from_values(outputs),
        concurrency=16,
        request_rate=math.inf,
    )


def realistic(rng, n):
    prompts = np.maximum(1, rng.lognormal(math.log(512), 0.5, n).round())
    outputs = np.maximum(1, rng.lognormal(math.log(200), 0.6, n).round())
    return prompts, outputs


def same_mean_other_shape(rng, n):
    """The realistic prompts, and outputs of the realistic mean but fixed (ignore_eos)."""
    prompts, outputs = realistic(rng, n)
    return prompts, np.full(n, round(float(outputs.mean())))


def old_rule(prompts, outputs) -> gate.WorkloadShape:
    return gate.WorkloadShape(16, math.inf, float(prompts.mean()), float(outputs.mean()))


def rate(rng, n, make_b) -> tuple[float, float]:
    """(share the fingerprint refuses, share the old means-within-10% rule refuses)."""
    hits = old = 0
    for _ in range(TRIALS):
        a, b = realistic(rng, n), make_b(rng, n)
        hits += bool(differences(fingerprint(*a), fingerprint(*b)))
        old += bool(gate.shape_differences(old_rule(*a), old_rule(*b)))
    return hits / TRIALS, old / TRIALS


def main() -> None:
    rng = np.random.default_rng(11)
    print(f"{TRIALS} trials a cell; lengths lognormal (prompt 512/0.5, output 200/0.6).")
    print(
        "requests a run | same workload refused: fingerprint, old rule | same mean, fixed "
        "lengths told apart: fingerprint, old rule"
    )
    for n in (50, 100, 400, 1000):
        same, same_old = rate(rng, n, realistic)
        other, other_old = rate(rng, n, same_mean_other_shape)
        print(f"{n:>14,} | {same:>6.2%} {same_old:>6.2%} | {other:>6.1%} {other_old:>6.1%}")


if __name__ == "__main__":
    main()
