"""How well the capacity planner predicts the highest load meeting an SLO: leave-one-out.

For every sweep in the corpus (tests/fixtures/sweeps/*.json: real published sweeps, see the
README there; and the demo's vllm-bench sweep files), hold out each interior point in turn (not
the lowest or highest load: those would be extrapolation), fit the curves on the other points,
set the SLO at the held-out point's measured percentiles, and compare the predicted highest load
with the point's measured load. Printed for the planner (`analysis.capacity`) and for plain
log-log interpolation between the held-out point's two neighbours, on the same trials:

- within 10% / within 20%: the share of held-out points whose predicted load is that close
  (a point the planner finds broken below the sweep counts as predicted 0, a miss);
- coverage: the share whose measured load lies in the stated 80% interval (planner only).

"Load", two readings, both printed:

- "rate" (the headline): the held-out point's *measured* request rate (its request
  throughput), against the planner's `max_request_rate`, the figure replicas are counted from:
  the crossing on the sweep's axis, turned into a rate through the *other* points' measured
  rates (`capacity.rate_at`, as `planning.plan` does); log-log's crossing is turned into a rate
  by log-log interpolation between the same two neighbours' measured rates;
- "setting": the point's nominal concurrency or offered request rate, against the crossing.

"Set the SLO at that point's measured percentiles", two readings, both printed:

- "all" (the headline): one trial per held-out point, every percentile it carries (TTFT, TPOT,
  E2E at P50/P90/P95/P99; not ITL, which a plan cannot hold) is an objective at once, as a plan
  holds them; the planner's answer is the highest load meeting all of them (objectives it
  cannot tell apart are fitted jointly), log-log's the lowest of its per-objective crossings;
- "each": one trial per (point, percentile), a single objective at a time.

    .venv/bin/python bench/planner.py --no-demo            # the table on the real sweeps
    .venv/bin/python bench/planner.py --no-demo --misses   # and every held-out point ("rate, all")
    .venv/bin/python bench/planner.py --no-demo --calibrate   # the interval's factor, 2-fold
    .venv/bin/python bench/planner.py --no-demo --halves      # the table on each 2-fold half too
    .venv/bin/python bench/planner.py --no-demo --rate-map    # the setting-to-rate map alone
    .venv/bin/python bench/planner.py --corpus DIR         # another folder of sweep JSON files

After the table, the headline reading is split by whether the sweep's own data agree with the
held-out point's load: where its lower neighbour already breaks one of the point's objectives,
or its higher neighbour meets all of them, the measured data are not monotone around the point
and no curve that never falls with load can land on its load. Those trials still count in the
headline; the split says how much of the miss is theirs.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from analysis import capacity

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "sweeps"
DEMO = ROOT / "demo" / "loadtests"
DEMO_PREFIX = "demo "  # how a demo sweep's name starts
METRICS = ("ttft", "tpot", "e2e")
QUANTILES = {"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99}


def _vllm_point(run: dict) -> dict:
    point = {"completed": run.get("completed"), "request_throughput": run.get("request_throughput")}
    if run.get("max_concurrency") and str(run.get("request_rate")) == "inf":
        point["concurrency"] = run["max_concurrency"]
    else:
        point["request_rate"] = float(run["request_rate"])
    for metric, key in (("ttft", "ttft"), ("tpot", "tpot"), ("e2e", "e2el")):
        for p in QUANTILES:
            value = run.get(f"{p}_{key}_ms") or (
                run.get(f"median_{key}_ms") if p == "p50" else None
            )
            if value:
                point[f"{metric}_{p}_ms"] = value
    return point


def load_corpus(folder: Path = CORPUS, demo: Path | None = DEMO) -> list[dict]:
    """Sweeps as {name, axis, points: [{concurrency|request_rate, completed, <metric>_<p>_ms}]}."""
    sweeps = []
    for path in sorted(folder.glob("*.json")):
        sweeps.extend(json.loads(path.read_text()))
    if demo is not None:
        for path in sorted(demo.glob("*/*sweep*.jsonl")):
            runs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            points = [_vllm_point(r) for r in runs]
            axis = "concurrency" if "concurrency" in points[0] else "request_rate"
            sweeps.append({"name": f"{DEMO_PREFIX}{path.name}", "axis": axis, "points": points})
    return sweeps


def curve_points(sweep: dict, metric: str, p: str, skip: int | None) -> list[capacity.Point]:
    axis = sweep["axis"]
    out = []
    for i, point in enumerate(sweep["points"]):
        value = point.get(f"{metric}_{p}_ms")
        if i == skip or not value or value <= 0:
            continue
        count = int(point["completed"]) if point.get("completed") else None
        p50 = point.get(f"{metric}_p50_ms")
        others = {q: point.get(f"{metric}_{name}_ms") for name, q in QUANTILES.items()}
        sigma = capacity.point_spread(p50, value, QUANTILES[p], count, others)
        out.append(capacity.Point(point[axis], value, count, sigma))
    return out


def trials(sweeps: list[dict], mode: str):
    """(sweep name, held-out point, [(objective name, limit, held-out curve points, q,
    neighbours)], the other points) for every interior point of every sweep."""
    for sweep in sweeps:
        axis = sweep["axis"]
        pts = sorted(sweep["points"], key=lambda p: p[axis])
        sweep = {**sweep, "points": pts}
        for i in range(1, len(pts) - 1):
            held = pts[i]
            objectives = []
            for metric in METRICS:
                for p, q in QUANTILES.items():
                    key = f"{metric}_{p}_ms"
                    if not held.get(key) or held[key] <= 0:
                        continue
                    rest = curve_points(sweep, metric, p, skip=i)
                    if len(rest) < 2 or not (pts[i - 1].get(key) and pts[i + 1].get(key)):
                        continue
                    neighbours = (
                        (pts[i - 1][axis], pts[i - 1][key]),
                        (pts[i + 1][axis], pts[i + 1][key]),
                    )
                    objectives.append((key, held[key], rest, q, neighbours))
            if not objectives:
                continue
            others = pts[:i] + pts[i + 1 :]
            if mode == "all":
                yield sweep, i, objectives, others
            else:
                for objective in objectives:
                    yield sweep, i, [objective], others


RATE = "rate"  # the held-out point's measured request rate (request_throughput): the plan's figure
SETTING = "setting"  # its nominal concurrency or request rate: the sweep's axis
LOADS = (RATE, SETTING)


def _loglog_map(x0: float, r0: float, x1: float, r1: float, x: float) -> float:
    """The neighbours' measured rate, interpolated in log-log at load setting x (in [x0, x1])."""
    t = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
    return math.exp(math.log(r0) + t * (math.log(r1) - math.log(r0)))


def contradicted(sweep: dict, i: int, objectives: list) -> bool:
    """Whether the held-out point's neighbours contradict its load: the lower one already breaks
    one of its objectives, or the higher one meets all of them (data not monotone around it)."""
    below, above = sweep["points"][i - 1], sweep["points"][i + 1]
    breaks_below = any(below[key] > limit for key, limit, *_ in objectives)
    meets_above = all(above[key] <= limit for key, limit, *_ in objectives)
    return breaks_below or meets_above


def run(
    sweeps: list[dict],
    mode: str,
    calibration: float = capacity.CALIBRATION,
    joint_calibration: float = capacity.JOINT_CALIBRATION,
    load: str = RATE,
    detail: list | None = None,
    only: bool | None = None,
) -> dict:
    """Leave-one-out figures for one reading (mode: "all" | "each"; load: RATE | SETTING).
    With `detail`, one row per trial is appended: (sweep name, setting, measured, predicted,
    low, high, log-log). With `only`, just the trials whose neighbours contradict the held-out
    load (True) or agree with it (False)."""
    n = hit10 = hit20 = base10 = base20 = covered = 0
    for sweep, i, objectives, others in trials(sweeps, mode):
        if only is not None and contradicted(sweep, i, objectives) != only:
            continue
        axis = sweep["axis"]
        held = sweep["points"][i]
        curves = {}
        base = math.inf
        for key, limit, rest, q, ((x0, y0), (x1, y1)) in objectives:
            curves[key] = (capacity.fit_curve(rest, q), limit)
            base = min(base, capacity.loglog_between(x0, y0, x1, y1, limit))
        result = capacity.max_load(
            curves, calibration=calibration, joint_calibration=joint_calibration
        )
        estimate = result.load
        measured = held[axis]
        if load == RATE:
            if not held.get("request_throughput"):
                continue
            measured = held["request_throughput"]
            # The planner's figure: its crossing, through the *other* points' measured rates
            # (planning.plan does the same with a sweep's runs).
            xs = [p[axis] for p in others if p.get("request_throughput")]
            rates = [p["request_throughput"] for p in others if p.get("request_throughput")]
            if estimate is not None:
                estimate = capacity.rate_at(xs, rates, estimate)
            before, after = sweep["points"][i - 1], sweep["points"][i + 1]
            base = _loglog_map(
                before[axis],
                before["request_throughput"],
                after[axis],
                after["request_throughput"],
                base,
            )
        predicted = estimate.value if estimate else 0.0
        n += 1
        error = abs(predicted / measured - 1)
        hit10 += error <= 0.10
        hit20 += error <= 0.20
        berror = abs(base / measured - 1)
        base10 += berror <= 0.10
        base20 += berror <= 0.20
        inside = bool(estimate and estimate.low <= measured <= estimate.high)
        covered += inside
        if detail is not None:
            detail.append(
                (
                    sweep["name"],
                    held[axis],
                    measured,
                    predicted,
                    estimate.low if estimate else 0.0,
                    estimate.high if estimate else 0.0,
                    base,
                )
            )
    return {
        "points": n,
        "within10": hit10 / n,
        "within20": hit20 / n,
        "coverage": covered / n,
        "loglog_within10": base10 / n,
        "loglog_within20": base20 / n,
    }


FACTORS = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0)


def _closest(coverage: dict[float, float]) -> float:
    return min(coverage, key=lambda f: abs(coverage[f] - capacity.LEVEL))


def calibrate(sweeps: list[dict]) -> None:
    """Pick the interval's two factors on half the sweeps and report the coverage they give on
    the other half, both ways round (a factor is never judged on the sweeps it was chosen on):
    the single crossing's factor on one objective at a time ("each"), then, with it, the joint
    fit's factor on every percentile at once ("all")."""
    parts = halves(sweeps)
    for fold, (tune, judge) in enumerate((parts, parts[::-1]), start=1):
        single = _closest({f: run(tune, "each", f)["coverage"] for f in FACTORS})
        joint = _closest({f: run(tune, "all", single, f)["coverage"] for f in FACTORS})
        each, every = run(judge, "each", single, joint), run(judge, "all", single, joint)
        print(
            f"fold {fold}: factors {single} (single) and {joint} (joint) chosen on {len(tune)} "
            f"sweeps cover {each['coverage']:.0%} (each, {each['points']} trials) and "
            f"{every['coverage']:.0%} (all, {every['points']} points) on the other {len(judge)}"
        )
    for factor in FACTORS:
        each = run(sweeps, "each", factor)
        every = run(sweeps, "all", capacity.CALIBRATION, factor)
        print(
            f"factor {factor:3}: single crossing, each: coverage {each['coverage']:.0%}; "
            f"joint (single {capacity.CALIBRATION}), all: {every['coverage']:.0%}"
        )


def halves(sweeps: list[dict]) -> tuple[list[dict], list[dict]]:
    """The 2-fold split: sweeps in even places of the corpus's order, and in odd ones."""
    return sweeps[0::2], sweeps[1::2]


def rate_map(sweeps: list[dict]) -> None:
    """How well `capacity.rate_at` alone predicts each interior point's measured rate from the
    other points at the point's own setting (no SLO, no crossing: the map's share of the error)."""
    for name, part in zip("AB", halves(sweeps), strict=True):
        n = hit10 = hit20 = 0
        for sweep in part:
            axis = sweep["axis"]
            pts = sorted(sweep["points"], key=lambda p: p[axis])
            for i in range(1, len(pts) - 1):
                measured = pts[i].get("request_throughput")
                others = [p for p in pts[:i] + pts[i + 1 :] if p.get("request_throughput")]
                if not measured or len(others) < 2:
                    continue
                x = pts[i][axis]
                at = capacity.rate_at(
                    [p[axis] for p in others],
                    [p["request_throughput"] for p in others],
                    capacity.Estimate(x, x, x),
                )
                error = abs(at.value / measured - 1)
                n += 1
                hit10 += error <= 0.10
                hit20 += error <= 0.20
        print(
            f"rate map alone, half {name} ({n} points): within 10% {hit10 / n:.0%}, "
            f"within 20% {hit20 / n:.0%}"
        )


def _table(sweeps: list[dict], label: str = "") -> None:
    for load in LOADS:
        for mode in ("all", "each"):
            r = run(sweeps, mode, load=load)
            print(
                f"{label}load={load:7} SLO={mode:4} trials {r['points']:4}: planner within 10% "
                f"{r['within10']:.0%}, within 20% {r['within20']:.0%}, 80% interval covers "
                f"{r['coverage']:.0%} | log-log neighbours within 10% "
                f"{r['loglog_within10']:.0%}, within 20% {r['loglog_within20']:.0%}"
            )


def _split(sweeps: list[dict]) -> None:
    """The headline reading on trials whose neighbours agree with the held-out load, and on the
    others."""
    for only, words in ((False, "agree with"), (True, "contradict")):
        r = run(sweeps, "all", load=RATE, only=only)
        print(
            f"load=rate SLO=all, neighbours {words} the held-out load, trials {r['points']:4}: "
            f"planner within 10% {r['within10']:.0%}, within 20% {r['within20']:.0%}, 80% "
            f"interval covers {r['coverage']:.0%} | log-log within 10% "
            f"{r['loglog_within10']:.0%}, within 20% {r['loglog_within20']:.0%}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--no-demo", action="store_true", help="leave the demo's sweeps out")
    parser.add_argument("--calibrate", action="store_true")
    parser.add_argument("--halves", action="store_true", help="the table on each 2-fold half")
    parser.add_argument(
        "--rate-map", action="store_true", help="the setting-to-rate map alone, per half"
    )
    parser.add_argument(
        "--misses", action="store_true", help="list every held-out point of the headline reading"
    )
    args = parser.parse_args()
    sweeps = load_corpus(args.corpus, None if args.no_demo else DEMO)
    print(f"{len(sweeps)} sweeps, {sum(len(s['points']) for s in sweeps)} points")
    _table(sweeps)
    _split(sweeps)
    demo = [s for s in sweeps if s["name"].startswith(DEMO_PREFIX)]
    if demo:  # the demo's sweeps were made for the demo: the real ones are the measure
        _table([s for s in sweeps if s not in demo], "real sweeps alone: ")
        _table(demo, "demo sweeps alone: ")
    if args.halves:
        for name, part in zip("AB", halves(sweeps), strict=True):
            _table(part, f"half {name}: ")
    if args.rate_map:
        rate_map(sweeps)
    if args.misses:
        rows: list = []
        run(sweeps, "all", load=RATE, detail=rows)
        print("\nsweep | setting | measured req/s | planner (80% interval) | log-log")
        for name, x, measured, predicted, low, high, base in rows:
            flag = "" if abs(predicted / measured - 1) <= 0.10 else " MISS10"
            flag += "" if low <= measured <= high else " OUT"
            print(
                f"{name[:60]:60} | {x:g} | {measured:.3g} | {predicted:.3g} ({low:.3g}-"
                f"{high:.3g}) {predicted / measured - 1:+.0%}{flag} | {base:.3g} "
                f"{base / measured - 1:+.0%}"
            )
    if args.calibrate:
        calibrate(sweeps)


if __name__ == "__main__":
    main()
