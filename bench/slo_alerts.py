"""How often the SLO burn-rate alerts page on in-budget traffic, and how fast they page on a
real burn: 30-day replays through `analysis.slo.replay` (the same >= factor, both windows and
minimum-requests rule the live kind applies), minute by minute.

False alarms: each month draws every minute's bad requests around a steady in-budget share
(0.25x, 0.5x and 0.9x of the allowed share): binomial, and "bursty", where each hour's share
is the mean times a lognormal factor (sigma 0.5, mean 1), as real error rates wander. Printed
per traffic level (1, 10 and 100 requests a second): pages a month per pair (each alert held
for its short window after the burn stops, as the default rules are).
Detection: minutes from the start of a total outage (after a day of 0.5x traffic) and of a
steady 14.4x burn until each pair fires, at targets 99%, 99.5% and 99.9%.

    .venv/bin/python bench/slo_alerts.py            # ~1 min of CPU
    .venv/bin/python bench/slo_alerts.py --months 3 # quicker
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from analysis import slo

MINUTES = 30 * 1440


def month(rng, *, per_min: int, bad_share: float, bursty: bool) -> tuple[list, list]:
    shares = np.full(MINUTES, bad_share)
    if bursty:
        hourly = rng.lognormal(-0.125, 0.5, size=MINUTES // 60)  # mean 1
        shares = np.clip(np.repeat(hourly, 60) * bad_share, 0.0, 1.0)
    bad = rng.binomial(per_min, shares)
    total = np.full(MINUTES, per_min)
    return (total - bad).tolist(), total.tolist()


def detection(target: float, pair: slo.BurnPair, *, burn: float) -> float | None:
    """Minutes from the start of a steady burn (after a day at 0.5x) until the pair fires."""
    per_min = 600
    calm = per_min * (1 - (1 - target) * 0.5)
    good = [calm] * 1440 + [per_min * (1 - min(1.0, burn * (1 - target)))] * (4 * 1440)
    total = [per_min] * len(good)
    fired = [i for i in slo.replay(good, total, target=target, pair=pair) if i >= 1440]
    return fired[0] - 1440 + 1 if fired else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--months", type=int, default=10, help="months replayed per cell")
    args = parser.parse_args()
    started = time.perf_counter()
    rng = np.random.default_rng(2026)
    target = 0.99
    print(f"False alarms at a {target:.0%} target: pages a month per pair "
          f"(fast / slow / ticket / outage), {args.months} months a cell")  # fmt: skip
    worst = 0.0
    for bursty in (False, True):
        print(f"\n{'bursty' if bursty else 'binomial'} bad requests")
        print(f"{'req/s':>6} " + " ".join(f"{f'{x}x budget':>26}" for x in (0.25, 0.5, 0.9)))
        for per_s in (1, 10, 100):
            cells = []
            for x in (0.25, 0.5, 0.9):
                pages = [0] * len(slo.DEFAULT_PAIRS)
                for _ in range(args.months):
                    good, total = month(rng, per_min=per_s * 60, bad_share=x * (1 - target),
                                        bursty=bursty)  # fmt: skip
                    for k, pair in enumerate(slo.DEFAULT_PAIRS):
                        fired = slo.replay(good, total, target=target, pair=pair,
                                           keep_firing_s=pair.short_s)  # fmt: skip
                        pages[k] += len(fired)
                rates = [p / args.months for p in pages]
                worst = max(worst, *[rates[0], rates[1], rates[3]])
                cells.append(" / ".join(f"{r:.1f}" for r in rates))
            print(f"{per_s:>6} " + " ".join(f"{c:>26}" for c in cells))
    print("\nDetection (minutes from the start of the burn until the pair fires):")
    print(f"{'target':>7} {'burn':>8} " + " ".join(f"{p.name:>8}" for p in slo.DEFAULT_PAIRS))
    for t in (0.99, 0.995, 0.999):
        for label, burn in (("outage", 1 / (1 - t)), ("14.4x", 14.4), ("6x", 6.0)):
            mins = [detection(t, p, burn=burn) for p in slo.DEFAULT_PAIRS]
            cells = " ".join(f"{'never' if m is None else m:>8}" for m in mins)
            print(f"{t:>7.1%} {label:>8} {cells}")
    print(
        "\nWorst page rate on in-budget traffic (fast, slow and outage pairs): "
        f"{worst:.2f} a month."
    )
    print(f"({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
