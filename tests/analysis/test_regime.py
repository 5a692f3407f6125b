"""The reference set's regime: older baselines the gate's own test tells apart are cut."""

from __future__ import annotations

import math

import numpy as np

from analysis import gate
from analysis.regime import regime_start


def run(rng, tpot_sigma: float = 0.5, n: int = 1000) -> gate.RunData:
    ttft = rng.lognormal(math.log(250), 0.5, n)
    tpot = rng.lognormal(math.log(25), tpot_sigma, n)
    e2e = ttft + tpot * 200
    values = {
        f"{name}_p{p}_ms": float(np.percentile(a, p))
        for name, a in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e))
        for p in (50, 90, 99)
    }
    values.update(qps=10.0, output_tps=2000.0)
    return gate.RunData(values=values, samples={"ttft": ttft, "tpot": tpot, "e2e": e2e}, requests=n)


def test_a_heavier_tail_in_the_newest_baseline_cuts_the_older_ones():
    rng = np.random.default_rng(5)
    older = [run(rng) for _ in range(4)]
    cut = regime_start(run(rng, tpot_sigma=0.94), older)
    assert cut is not None and cut[0] == 0 and "worse" in cut[1]


def test_one_regime_keeps_every_baseline():
    rng = np.random.default_rng(6)
    assert regime_start(run(rng), [run(rng) for _ in range(4)]) is None


def test_baselines_promoted_together_stay_whatever_the_test_says():
    rng = np.random.default_rng(7)
    older = [run(rng), run(rng)]
    cut = regime_start(run(rng, tpot_sigma=0.94), older, together=[True, False])
    assert cut is not None and cut[0] == 1
