"""How often the release gate cries wolf, and how often it catches a real regression.

Independent synthetic `vllm bench serve` runs, shaped as vLLM writes them: per-request TTFT and
TPOT lognormal, output lengths uniform, every request's E2E = TTFT + TPOT x (output - 1), the
run's duration replayed through 16 concurrency slots (a closed loop, request rate unlimited),
and every summary key (percentiles, request and token throughput) computed from those arrays.
Each trial gates fresh candidate runs against a baseline set of BASELINE_RUNS other runs, with
the real `analysis.gate.compare_runs`.

Printed per run size (400 requests, 1,000 requests) and candidate repeats (1, 3):
- A/A false alarms: the candidate comes from the baseline's distribution (sigma 0.5 and 1.0, with
  and without per-token `itls`: without them a file carries TTFT per request only, so TPOT, E2E
  and throughput rows fall back to the spread over runs).
- Detection: TTFT +10%, TTFT +30%, the slowest 2% of requests taking twice their E2E (by the
  whole gate, and by the E2E P99 row alone), request and token throughput -10%.
Runs are drawn from pools of independent runs (each trial takes distinct runs at random).

    .venv/bin/python bench/gate_quality.py             # the table (~40 s of CPU)
    .venv/bin/python bench/gate_quality.py --quick     # fewer trials, for CI-size checks
    .venv/bin/python bench/gate_quality.py --thorough  # 400 A/A trials a cell (~1 min of CPU)
    .venv/bin/python bench/gate_quality.py --regime    # A/A after a regime change (issue 23)

--regime: a service's history holds OLDER_BASELINES runs of an old regime and, newest, one
promoted run of a new regime (a heavier TPOT tail: P90 +75%, median unchanged); identical builds
of the new regime are gated against (a) the newest BASELINE_RUNS baselines of the shape, the
rule before issue 23, and (b) the anchor's regime (`analysis.regime`: older baselines the gate's
own test tells apart from the newest are cut). Without a regime change it also counts how often
(b) cuts an old-regime history that did not change, and the A/A rate then.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from analysis import gate, gatestats, regime

CONCURRENCY = 16
BASELINE_RUNS = 5
TTFT_MEDIAN_MS = 250.0
TPOT_MEDIAN_MS = 25.0
OUTPUT_TOKENS = (128, 384)  # uniform, inclusive
QUANTILES = (50, 90, 99)


@dataclass(frozen=True)
class Effect:
    name: str
    ttft: float = 1.0  # multiplies every TTFT
    tail: float = 1.0  # multiplies the E2E of the slowest 2% of requests
    throughput: float = 1.0  # multiplies the run's request and token rates (a slower loop)
    tpot_spread: float = 1.0  # multiplies TPOT's log-spread: a heavier tail, same median


NULL = Effect("A/A")
EFFECTS = (
    Effect("TTFT +10%", ttft=1.10),
    Effect("TTFT +30%", ttft=1.30),
    Effect("2% tail x2", tail=2.0),
    Effect("throughput -10%", throughput=0.90),
)


def makespan(e2e_ms: np.ndarray, slots: int) -> float:
    """Requests in order, each to the slot that frees first (vLLM's semaphore)."""
    free = np.array(e2e_ms[:slots], dtype=float)
    for value in e2e_ms[slots:]:
        free[np.argmin(free)] += value
    return float(free.max())


def synthetic_run(
    rng: np.random.Generator, n: int, sigma: float, effect: Effect, itls: bool
) -> gate.RunData:
    ttft = rng.lognormal(math.log(TTFT_MEDIAN_MS), sigma, n) * effect.ttft
    tpot = rng.lognormal(math.log(TPOT_MEDIAN_MS), sigma * effect.tpot_spread, n)
    out = rng.integers(OUTPUT_TOKENS[0], OUTPUT_TOKENS[1] + 1, n)
    e2e = ttft + tpot * (out - 1)
    if effect.tail != 1.0:
        slow = np.argsort(e2e)[-max(1, round(0.02 * n)) :]
        e2e[slow] *= effect.tail
        tpot[slow] = (e2e[slow] - ttft[slow]) / (out[slow] - 1)
    duration_s = makespan(e2e, CONCURRENCY) / 1000 / effect.throughput
    values: dict[str, float] = {
        "qps": n / duration_s,
        "output_tps": float(out.sum()) / duration_s,
    }
    for family, array in (("ttft", ttft), ("tpot", tpot), ("e2e", e2e)):
        for p in QUANTILES:
            values[f"{family}_p{p}_ms"] = float(np.percentile(array, p))
    # A file without itls has TTFT per request only: TPOT and E2E per request are unknown.
    samples = {"ttft": ttft, "tpot": tpot, "e2e": e2e} if itls else {"ttft": ttft}
    return gate.RunData(
        values=values,
        samples=samples,
        requests=n,
        concurrency=CONCURRENCY,
        output_tokens_cv=float(out.std() / out.mean()),
    )


class Pool:
    """Prepared runs of one kind; trials draw distinct runs from it."""

    def __init__(self, rng, size, n, sigma, effect, itls):
        self.runs = [gate.prepare(synthetic_run(rng, n, sigma, effect, itls)) for _ in range(size)]

    def draw(self, rng, k, exclude=()):
        choices = [i for i in rng.permutation(len(self.runs)) if i not in exclude][:k]
        return [self.runs[i] for i in choices], set(choices)


def mde90(row: gate.GateRow) -> float | None:
    """The change the row catches 90% of the time: its MDE (80%), moved by 0.44 standard errors
    (the normal's 90th minus 80th percentile), so the row's own tail (throughput's long low
    tail) and Holm's first step stay in it."""
    if row.interval is None or row.mde is None:
        return None
    se = (math.log1p(row.interval[1]) - math.log1p(row.interval[0])) / (2 * 1.959964)
    extra = (gatestats.critical(0.10, None) - gatestats.critical(0.20, None)) * se
    if row.threshold_text.startswith("+"):  # lower is better: a rise
        return math.expm1(math.log1p(row.mde) + extra)
    return -math.expm1(math.log(1 - row.mde) - extra)  # higher is better: a drop


def rate(base_pool, cand_pool, rng, repeats, trials, row=None):
    """Share of trials the gate fails (or, with `row`, that row alone calls a regression), and
    the median change `row` would catch 90% of the time."""
    hits = 0
    reach = []
    for _ in range(trials):
        base, used = base_pool.draw(rng, BASELINE_RUNS)
        same = cand_pool is base_pool
        cand, _ = cand_pool.draw(rng, repeats, exclude=used if same else ())
        result = gate.compare_runs(base, cand)
        found = next((r for r in result.rows if r.metric == row), None)
        hits += (found.verdict == "regression") if found else not result.passed
        if found is not None and (value := mde90(found)) is not None:
            reach.append(value)
    return hits / trials, (float(np.median(reach)) if reach else None)


OLDER_BASELINES = 4
# TPOT's log-spread x1.88 (sigma 0.5 -> 0.94): P90 TPOT +75%, the median unchanged.
NEW_REGIME = Effect("heavier TPOT tail, P90 +75%", tpot_spread=1.88)


def reference_by_regime(anchor, older):
    """The anchor and the older baselines of its regime (`analysis.regime.regime_start`)."""
    cut = regime.regime_start(anchor, older)
    return [anchor, *(older if cut is None else older[: cut[0]])], cut is not None


def regime_study(rng, trials: int, pool_size: int, n: int = 1000) -> None:
    old = Pool(rng, pool_size, n, 0.5, NULL, True)
    new = Pool(rng, pool_size, n, 0.5, NEW_REGIME, True)
    print(
        f"Regime change: {OLDER_BASELINES} old-regime baselines, then 1 promoted new-regime "
        f"baseline ({NEW_REGIME.name}); candidates are identical new-regime builds; {n:,} "
        f"requests a run, {trials} trials a cell."
    )
    for repeats in (1, 3):
        shape_rule = regime_rule = 0
        for _ in range(trials):
            older, _ = old.draw(rng, OLDER_BASELINES)
            (anchor, *cands), _ = new.draw(rng, 1 + repeats)
            shape_rule += not gate.compare_runs([anchor, *older], cands).passed
            reference, _ = reference_by_regime(anchor, older)
            regime_rule += not gate.compare_runs(reference, cands).passed
        print(
            f"  x {repeats}: false alarms with the newest {BASELINE_RUNS} of the shape "
            f"{shape_rule}/{trials} ({shape_rule / trials:.1%}); with the anchor's regime "
            f"{regime_rule}/{trials} ({regime_rule / trials:.1%})"
        )
    cuts = alarms = 0
    for _ in range(trials):
        (anchor, *older, cand), _ = old.draw(rng, 2 + OLDER_BASELINES)
        reference, cut = reference_by_regime(anchor, older)
        cuts += cut
        alarms += not gate.compare_runs(reference, [cand]).passed
    print(
        f"  no regime change: the set was cut in {cuts}/{trials} ({cuts / trials:.1%}) of "
        f"unchanged histories; A/A false alarms {alarms}/{trials} ({alarms / trials:.1%})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer trials (CI-size check)")
    parser.add_argument(
        "--thorough", action="store_true", help="more trials (400 A/A a cell; ~1 min of CPU)"
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--regime", action="store_true", help="only the regime-change study (issue 23)"
    )
    args = parser.parse_args()
    aa_trials, effect_trials, pool_size = (300, 100, 120)
    if args.quick:
        aa_trials, effect_trials, pool_size = (60, 30, 40)
    elif args.thorough:
        aa_trials, effect_trials, pool_size = (400, 120, 160)
    effect_pool_size = min(pool_size, 100)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    if args.regime:
        regime_study(rng, 40 if args.quick else 200, 60 if args.quick else 200)
        print(f"({time.perf_counter() - started:.0f} s)")
        return

    print(
        f"Gate quality: baseline = {BASELINE_RUNS} runs, c={CONCURRENCY}, lognormal TTFT/TPOT "
        f"(medians {TTFT_MEDIAN_MS:g}/{TPOT_MEDIAN_MS:g} ms), outputs {OUTPUT_TOKENS[0]}-"
        f"{OUTPUT_TOKENS[1]} tokens; A/A {aa_trials} trials a cell, detection {effect_trials}."
    )
    print(f"Tail rows are judged with >= {gate.TAIL_REQUESTS} requests beyond the quantile a side.")
    header = (
        "requests x repeats",
        "A/A s0.5",
        "A/A s0.5 no-itls",
        "A/A s1.0",
        "A/A s1.0 no-itls",
        "TTFT +10%",
        "TTFT +30%",
        "tail x2 (gate)",
        "tail x2 (E2E P99 row)",
        "throughput -10%",
    )
    rows = []
    notes = []
    worst_aa = 0.0
    for n in (400, 1000):
        pools = {}
        for sigma in (0.5, 1.0):
            for itls in (True, False):
                pools[(sigma, itls)] = Pool(rng, pool_size, n, sigma, NULL, itls)
        effect_pools = {e.name: Pool(rng, effect_pool_size, n, 0.5, e, True) for e in EFFECTS}
        for repeats in (1, 3):
            cells = [f"{n:,} x {repeats}"]
            for sigma in (0.5, 1.0):
                for itls in (True, False):
                    pool = pools[(sigma, itls)]
                    aa, _ = rate(pool, pool, rng, repeats, aa_trials)
                    worst_aa = max(worst_aa, aa)
                    cells.append(f"{aa:.1%}")
            null = pools[(0.5, True)]
            for effect in EFFECTS:
                hit, _ = rate(null, effect_pools[effect.name], rng, repeats, effect_trials)
                cells.append(f"{hit:.0%}")
                if effect.throughput != 1.0 or effect.ttft == 1.10:
                    row = "qps" if effect.throughput != 1.0 else "ttft_shift"
                    _, reach = rate(null, null, rng, repeats, 10, row)
                    size = abs(effect.throughput - 1) + abs(effect.ttft - 1)
                    if reach is not None and reach > size:
                        cells[-1] += "*"
                        notes.append(
                            f"{n:,} x {repeats}: {effect.name} is out of reach (*): the "
                            f"{row} row's noise puts the change caught 90% of the time at "
                            f"{reach:.0%}."
                        )
                if effect.tail != 1.0:
                    row_hit, _ = rate(
                        null, effect_pools[effect.name], rng, repeats, effect_trials, "e2e_p99_ms"
                    )
                    tail = math.floor(n * repeats * 0.01)
                    if tail < gate.TAIL_REQUESTS:
                        cells.append(f"n/a ({tail} tail req.)")
                        notes.append(
                            f"{n:,} x {repeats}: the candidate's P99 rests on {tail} requests; the "
                            f"row says 'not enough tail data' (needs {gate.TAIL_REQUESTS}: "
                            f"{gate.TAIL_REQUESTS * 100:,} requests a side)."
                        )
                    else:
                        cells.append(f"{row_hit:.0%} ({tail} tail req.)")
            rows.append(cells)

    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for cells in rows:
        print("  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
    print()
    print(
        "Targets: A/A <= 1% every variant; >= 90% for TTFT +30%, throughput -10% and the "
        "doubled tail by its own row given enough tail requests; >= 80% for TTFT +10% at "
        "1,000 x 3."
    )
    print(f"Worst A/A false-alarm rate: {worst_aa:.1%} (over {aa_trials} trials a cell).")
    for note in notes:
        print("- " + note)
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
