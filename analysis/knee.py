"""The sweet spot of a sweep: runs that differ only in concurrency, request rate or batch size.

The rule. Walk the points in order of x (the swept setting). A step from the point reached to
a later one is *worth taking* when
  - throughput rises by at least `min_throughput_gain` (5%: smaller gains are run-to-run noise),
  - and latency pays less than throughput gains: either P99 barely moved (rose by at most
    `latency_tolerance`, 5%, or fell), or the elasticity
        ln(throughput ratio) / ln(P99 ratio)  >=  `min_elasticity` (1),
    i.e. each 1% of added latency buys at least 1% more throughput,
  - and the new point's P99 respects the SLO, when one is given.
The sweet spot is the last point reached before the first step that is not worth taking.

Noise: sweeps are not smooth. When the next point is not worth reaching, the walk looks further
along (from the same point) for a later one that is, so one noisy point does not end the walk;
only when no later point is worth reaching does it stop. A point whose P99 breaks the SLO stops
the walk outright: points further along carry more load still.

On the seed's shape (1 -> 16 in doubling steps: ~10x throughput for <2x latency, elasticity ~3;
16 -> 32: +20% for 2x latency, elasticity 0.26) the sweet spot is 16.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from numbers import Real

TAKEN = "taken"
NOT_WORTH_IT = "not worth it"
BREAKS_SLO = "breaks SLO"


@dataclass(frozen=True)
class SweepPoint:
    x: float  # the swept setting: concurrency, request rate or batch size
    throughput: float  # e.g. output tokens/s (any unit, the same for every point)
    p99_ms: float  # P99 latency of the metric the sweep is judged on (e.g. e2e)


@dataclass(frozen=True)
class Step:
    """One step the walk considered, from the point reached (`start`) to a later one (`end`)."""

    start: SweepPoint
    end: SweepPoint
    throughput_ratio: float
    latency_ratio: float
    elasticity: float | None  # None when P99 did not rise: every gain is then free
    verdict: str  # TAKEN | NOT_WORTH_IT | BREAKS_SLO
    reason: str

    @property
    def taken(self) -> bool:
        return self.verdict == TAKEN


@dataclass(frozen=True)
class KneeResult:
    best: SweepPoint | None  # None: no points, or even the first breaks the SLO
    index: int | None  # position of `best` in the points as given
    reason: str
    steps: tuple[Step, ...]  # every step the walk considered, in order


def _num(x: float) -> str:
    return f"{x:g}"


def _ratio(after: float, before: float) -> float:
    if before == 0:
        return math.inf if after > 0 else 1.0
    return after / before


def _judge(
    start: SweepPoint,
    end: SweepPoint,
    *,
    slo_p99_ms: float | None,
    min_elasticity: float,
    latency_tolerance: float,
    min_throughput_gain: float,
) -> Step:
    gain = _ratio(end.throughput, start.throughput)
    cost = end.p99_ms / start.p99_ms
    elasticity = math.log(gain) / math.log(cost) if cost > 1 and 0 < gain < math.inf else None
    head = (
        f"{_num(start.x)} -> {_num(end.x)}: throughput {(gain - 1) * 100:+.0f}% "
        f"for latency x{cost:.2f}"
    )

    if slo_p99_ms is not None and end.p99_ms > slo_p99_ms:
        verdict = BREAKS_SLO
        why = f"P99 {end.p99_ms:,.0f} ms breaks the SLO of {slo_p99_ms:,g} ms"
    elif gain < 1 + min_throughput_gain:
        verdict = NOT_WORTH_IT
        why = f"gain below {min_throughput_gain * 100:g}%"
    elif cost <= 1 + latency_tolerance:
        verdict = TAKEN
        # Lower load often has the worse P99 (a cold first request weighs more in fewer).
        why = "latency fell" if cost < 1 - latency_tolerance else "latency barely moved"
    elif elasticity is not None and elasticity >= min_elasticity:
        verdict = TAKEN
        why = f"elasticity {elasticity:.2f} >= {min_elasticity:g}"
    elif elasticity is None:  # gain is infinite: from zero throughput to some
        verdict = TAKEN
        why = "throughput started"
    else:
        verdict = NOT_WORTH_IT
        why = f"elasticity {elasticity:.2f} < {min_elasticity:g}"
    return Step(start, end, gain, cost, elasticity, verdict, f"{head}; {why}")


def _validate(points: Sequence[SweepPoint]) -> None:
    seen: dict[float, int] = {}
    for i, p in enumerate(points):
        for field in ("x", "throughput", "p99_ms"):
            value = getattr(p, field)
            if isinstance(value, bool) or not isinstance(value, Real):
                raise ValueError(f"points[{i}].{field} must be a number, got {value!r}")
            if not math.isfinite(value):
                raise ValueError(f"points[{i}].{field} must be finite, got {value!r}")
        if p.throughput < 0:
            raise ValueError(f"points[{i}].throughput must not be negative, got {p.throughput}")
        if p.p99_ms <= 0:
            raise ValueError(f"points[{i}].p99_ms must be positive, got {p.p99_ms}")
        if p.x in seen:
            raise ValueError(
                f"points[{seen[p.x]}] and points[{i}] share x={_num(p.x)}: "
                "a sweep has one run per setting (pick or merge replicate runs first)"
            )
        seen[p.x] = i


def _look_ahead(
    points: Sequence[SweepPoint], order: list[int], reached: int, judge: dict
) -> list[Step]:
    """Steps from the point reached to each later one, up to the first worth taking.

    Ends early at a point that breaks the SLO: points further along carry more load still.
    """
    considered = []
    for pos in range(reached + 1, len(order)):
        step = _judge(points[order[reached]], points[order[pos]], **judge)
        considered.append(step)
        if step.taken or step.verdict == BREAKS_SLO:
            break
    return considered


def sweet_spot(
    points: Sequence[SweepPoint],
    *,
    slo_p99_ms: float | None = None,
    min_elasticity: float = 1.0,
    latency_tolerance: float = 0.05,
    min_throughput_gain: float = 0.05,
) -> KneeResult:
    """The sweep's sweet spot by the rule in the module docstring, with the steps that led there.

    Points may come in any order; `index` refers to the order given.
    """
    if slo_p99_ms is not None and not slo_p99_ms > 0:
        raise ValueError(f"slo_p99_ms must be positive, got {slo_p99_ms!r}")
    _validate(points)
    if not points:
        return KneeResult(best=None, index=None, reason="no points to judge", steps=())

    order = sorted(range(len(points)), key=lambda i: points[i].x)
    first = points[order[0]]
    if slo_p99_ms is not None and first.p99_ms > slo_p99_ms:
        reason = (
            f"even the lowest setting {_num(first.x)} breaks the SLO: "
            f"P99 {first.p99_ms:,.0f} ms > {slo_p99_ms:,g} ms"
        )
        return KneeResult(best=None, index=None, reason=reason, steps=())

    judge = {
        "slo_p99_ms": slo_p99_ms,
        "min_elasticity": min_elasticity,
        "latency_tolerance": latency_tolerance,
        "min_throughput_gain": min_throughput_gain,
    }
    steps: list[Step] = []
    reached = 0  # position in `order`
    while True:
        considered = _look_ahead(points, order, reached, judge)
        steps.extend(considered)
        if not considered or not considered[-1].taken:
            break
        reached += len(considered)
    refusals = [s for s in considered if not s.taken]

    best = points[order[reached]]
    if not refusals:
        if len(points) == 1:
            reason = f"only one point ({_num(best.x)}) in the sweep"
        else:
            reason = (
                f"every step was worth taking up to the last point {_num(best.x)}: "
                "the knee may lie beyond the sweep"
            )
    else:
        reason = refusals[0].reason
    return KneeResult(best=best, index=order[reached], reason=reason, steps=tuple(steps))
