"""Goodput: requests per second that meet every objective, per run of the sweep.

Load tests keep each latency family's per-request distribution as a sketch
(`LoadTestSketch`), not the requests themselves, so the share of requests meeting *every*
objective is known only within bounds: at most the smallest per-objective share, at least
1 - (sum of the shares missing). Both are shown; with one objective they agree.
"""

from __future__ import annotations

from dataclasses import dataclass

from analysis import sketches
from loadtests.models import LoadTest, LoadTestSketch
from loadtests.sweeps import Sweep
from planning.objectives import Objective


@dataclass(frozen=True)
class RunGoodput:
    run: LoadTest
    load: float
    shares: dict[str, float]  # objective name -> share of requests meeting it
    at_most: float  # share meeting every objective, upper bound
    at_least: float  # lower bound

    @property
    def requests_per_s(self) -> tuple[float, float] | None:
        """(lower, upper) goodput in requests/s, from the run's request throughput."""
        if not self.run.qps:
            return None
        return self.run.qps * self.at_least, self.run.qps * self.at_most

    def to_dict(self) -> dict:
        rate = self.requests_per_s
        return {
            "run": self.run.pk,
            "load": self.load,
            "share_meeting_each": {k: round(v, 4) for k, v in self.shares.items()},
            "share_meeting_every": {"low": round(self.at_least, 4), "high": round(self.at_most, 4)},
            "goodput_requests_per_s": None
            if rate is None
            else {"low": round(rate[0], 4), "high": round(rate[1], 4)},
        }


def sweep_goodput(sweep: Sweep, objectives: list[Objective]) -> list[RunGoodput]:
    """Per run of the sweep that kept per-request sketches for every objective's metric."""
    metrics = {o.metric for o in objectives}
    rows = []
    stored = LoadTestSketch.objects.filter(load_test__in=sweep.runs, family__in=metrics)
    by_run: dict[int, dict[str, bytes]] = {}
    for row in stored.values_list("load_test_id", "family", "sketch"):
        by_run.setdefault(row[0], {})[row[1]] = bytes(row[2])
    for run in sweep.runs:
        blobs = by_run.get(run.pk, {})
        if not objectives or any(o.metric not in blobs for o in objectives):
            continue
        shares = {}
        for objective in objectives:
            share = sketches.share_at_most(
                sketches.loads(blobs[objective.metric]), objective.limit_ms
            )
            if share is None:
                break
            shares[objective.name] = share
        else:
            at_most = min(shares.values())
            at_least = max(0.0, 1 - sum(1 - s for s in shares.values()))
            rows.append(RunGoodput(run, sweep.x(run), shares, at_most, at_least))
    return rows
