"""How often the claims check calls a healthy service "drifted" at its baseline's workload.

A service shaped like three of the demo's (EngineProfile targets as their baselines) is simulated
by the demo's own engine (`demo.simulator`, the demo's ±3% daily swing) for
independent windows of `--minutes` (the claims window, 60 by default) at different hours and
seeds. Each window is judged as the claims check judges it (`analysis.claims`): the workload
compared in the bands of `dashboards.claims.WORKLOAD_BANDS`, then each latency percentile
(P50/P90/P99 of E2E, TTFT, TPOT, exact from the window's requests) and the output throughput
against the profile's own figures. A window with any "drifted" claim is a false alarm.

    .venv/bin/python bench/claims_false_alarms.py            # 3 profiles x 8 windows
    .venv/bin/python bench/claims_false_alarms.py --windows 3 --minutes 20   # quicker
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from datetime import UTC, datetime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from analysis import claims
from demo.engine_profile import EngineProfile
from demo.simulator import Simulator

# The demo baselines' shapes (support-chat-7b x2 replicas, code-review-13b x6, safety-guard-8b
# x12): rate for the whole service, mean lengths, latency targets. Replicas only scale the rate.
PROFILES = {
    "chat": (2, EngineProfile(qps=48, ttft_p50_ms=85, ttft_p99_ms=420, tpot_p50_ms=12.5,
                              tpot_p99_ms=21, e2e_p99_ms=1600, prompt_tokens=350,
                              output_tokens=48, swing=0.03)),
    "code-review": (6, EngineProfile(qps=13.5, ttft_p50_ms=260, ttft_p99_ms=572,
                                     tpot_p50_ms=53.6, tpot_p99_ms=67, e2e_p99_ms=10317,
                                     prompt_tokens=900, output_tokens=128, swing=0.03)),
    "safety": (12, EngineProfile(qps=96, ttft_p50_ms=62, ttft_p99_ms=170, tpot_p50_ms=14,
                                 tpot_p99_ms=21, e2e_p99_ms=276, prompt_tokens=650,
                                 output_tokens=6, swing=0.03)),
}  # fmt: skip
BANDS = dict.fromkeys(("rate", "prompt_tokens", "output_tokens"), claims.RESOURCE_BAND)


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def window(profile: EngineProfile, hour: int, seed: int, minutes: int) -> list[dict]:
    clock = Clock(datetime(2026, 3, 2, hour, tzinfo=UTC).timestamp())
    sim = Simulator(host="h", services=["s"], profiles={"s": profile}, seed=seed, clock=clock)
    rows = []
    for _ in range(minutes * 12):
        clock.now += 5.0
        rows += [r for r in sim.step()[2] if r["ok"]]
    return rows


def judge(profile: EngineProfile, replicas: int, rows: list[dict], seconds: float) -> list[str]:
    """The claims that drift in one window ("workload" when the workload itself left its band)."""
    baseline = claims.Workload(profile.qps / replicas, profile.prompt_tokens, profile.output_tokens)
    live = claims.Workload(
        len(rows) / seconds / replicas,
        statistics.fmean(r["prompt_tokens"] for r in rows),
        statistics.fmean(r["output_tokens"] for r in rows),
    )
    if not claims.compare_workload(baseline, live, BANDS).equal:
        return ["workload"]
    drifted = []
    targets = {"ttft": (profile.ttft_p50_ms, profile.ttft_p99_ms),
               "tpot": (profile.tpot_p50_ms, profile.tpot_p99_ms),
               "e2e": (None, profile.e2e_p99_ms)}  # fmt: skip
    for metric, (p50, p99) in targets.items():
        values = sorted(r[f"{metric}_ms"] for r in rows)
        for q, claimed in ((0.5, p50), (0.99, p99)):
            live_value = values[int(q * len(values))]
            if claimed and claims.judge(claimed, live_value).status == claims.Status.DRIFTED:
                drifted.append(f"{metric} p{round(q * 100)}")
    tps = sum(r["output_tokens"] for r in rows) / seconds / replicas
    claimed_tps = profile.qps / replicas * profile.output_tokens
    if claims.judge(claimed_tps, tps).status == claims.Status.DRIFTED:
        drifted.append("output tok/s")
    return drifted


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--windows", type=int, default=8)
    parser.add_argument("--minutes", type=int, default=60)
    args = parser.parse_args()
    total = alarms = 0
    for name, (replicas, profile) in PROFILES.items():
        for i in range(args.windows):
            hour = (3 * i) % 24  # around the clock: trough, peak and between
            rows = window(profile, hour, seed=i, minutes=args.minutes)
            drifted = judge(profile, replicas, rows, args.minutes * 60.0)
            total += 1
            alarms += bool(drifted)
            print(f"{name:12} {hour:02d}:00 seed {i}: {', '.join(drifted) or 'holds'}")
    print(f"false alarms: {alarms} of {total} windows ({alarms / total:.1%}) at equal workload")


if __name__ == "__main__":
    main()
