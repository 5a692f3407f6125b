"""The alert state machine, as plain functions over plain values.

One alert instance moves inactive -> pending -> firing -> resolved:
- it becomes *pending* when the fire condition holds (value beyond the threshold),
- it *fires* once the fire condition has held at every evaluation for `for_s` seconds,
- a firing alert stays firing while the value is beyond the *resolve* threshold (hysteresis:
  for "above" rules the resolve threshold is at or below the threshold, so a value hovering at
  the threshold does not flap), and for `keep_firing_for_s` seconds after it last was,
- then it is *resolved*. A pending alert whose condition stops holding goes back to inactive.

An observation without a usable value (no data, too few requests) is not evidence either way:
a firing alert keeps firing (its `keep_firing_for` clock does not advance on unknowns), and a
pending one goes back to inactive, since `for` asks for the condition at every evaluation.
Rule health (ok, no data, insufficient data, error) is reported beside, never folded in.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from enum import StrEnum
from typing import TYPE_CHECKING

from analysis import readable

if TYPE_CHECKING:
    from collections.abc import Callable


class State(StrEnum):
    INACTIVE = "inactive"
    PENDING = "pending"
    FIRING = "firing"
    RESOLVED = "resolved"


class Health(StrEnum):
    OK = "ok"
    NO_DATA = "no_data"
    INSUFFICIENT_DATA = "insufficient_data"
    ERROR = "error"


class Direction(StrEnum):
    ABOVE = "above"  # bad when the value is above the threshold (P99, KV cache, cost)
    BELOW = "below"  # bad when the value is below the threshold (margin, utilization)


@dataclass(frozen=True)
class Thresholds:
    direction: Direction
    threshold: float
    resolve_threshold: float | None = None  # None: the threshold itself
    for_s: float = 0.0
    keep_firing_for_s: float = 0.0
    # At the threshold counts as beyond it (burn rates: a burn at the factor is the pace the
    # rule is meant to catch). Others fire strictly beyond.
    inclusive: bool = False

    def __post_init__(self) -> None:
        resolve = self.resolve
        if self.direction == Direction.ABOVE and resolve > self.threshold:
            raise ValueError("resolve_threshold: must not be above the threshold of an above-rule")
        if self.direction == Direction.BELOW and resolve < self.threshold:
            raise ValueError("resolve_threshold: must not be below the threshold of a below-rule")
        if self.for_s < 0 or self.keep_firing_for_s < 0:
            raise ValueError("for_s and keep_firing_for_s: must not be negative")

    @property
    def resolve(self) -> float:
        return self.threshold if self.resolve_threshold is None else self.resolve_threshold

    def breaches(self, value: float) -> bool:
        """The fire condition: strictly beyond the threshold (or at it, when inclusive)."""
        if self.inclusive and value == self.threshold:
            return True
        if self.direction == Direction.ABOVE:
            return value > self.threshold
        return value < self.threshold

    def still_active(self, value: float) -> bool:
        """The hold condition of a firing alert: beyond the resolve threshold."""
        if self.inclusive and value == self.resolve:
            return True
        if self.direction == Direction.ABOVE:
            return value > self.resolve
        return value < self.resolve


@dataclass(frozen=True)
class Observation:
    """What one evaluation saw. `value` is None unless health is OK.

    `gate` is a precondition the rule adds (e.g. "requests are queued" for GPU waiting):
    when False the value is recorded but neither fires nor holds the alert.
    """

    health: Health
    value: float | None = None
    count: int | None = None
    reason: str = ""
    gate: bool = True

    @property
    def known(self) -> bool:
        return self.health == Health.OK and self.value is not None


@dataclass(frozen=True)
class InstanceState:
    state: State = State.INACTIVE
    pending_since: datetime | None = None
    fired_at: datetime | None = None
    last_active_at: datetime | None = None  # last evaluation that met the hold condition
    resolved_at: datetime | None = None

    @property
    def live(self) -> bool:
        return self.state in (State.PENDING, State.FIRING)


@dataclass(frozen=True)
class Step:
    state: InstanceState
    changed: bool  # the state (inactive/pending/firing/resolved) changed
    reason: str


def step(
    rule: Thresholds,
    current: InstanceState,
    obs: Observation,
    now: datetime,
    fmt: Callable[[float], str] = readable.measured,
) -> Step:
    """The next state of one instance after one evaluation at `now`. `fmt` writes a value
    in the reason as pages show it (the rule's unit: "3,520 ms"); durations read "5 min"."""
    s = current.state
    if not obs.known:
        if s == State.PENDING:
            return Step(
                InstanceState(State.INACTIVE),
                True,
                f"pending cancelled: {obs.reason or 'no value'}",
            )
        # Firing holds through unknowns; inactive and resolved stay as they are.
        return Step(current, False, obs.reason or "no value")

    value = obs.value
    assert value is not None
    breaching = obs.gate and rule.breaches(value)
    holding = obs.gate and rule.still_active(value)
    cmp = ">" if rule.direction == Direction.ABOVE else "<"
    for_span = timedelta(seconds=rule.for_s)

    if s in (State.INACTIVE, State.RESOLVED):
        if not breaching:
            return Step(current, False, "condition not met")
        if rule.for_s <= 0:
            fired = InstanceState(State.FIRING, now, now, now)
            reason = f"value {fmt(value)} {cmp} threshold {fmt(rule.threshold)}"
            return Step(fired, True, reason)
        pending = InstanceState(State.PENDING, pending_since=now, last_active_at=now)
        waiting = readable.span(rule.for_s)
        reason = f"value {fmt(value)} {cmp} threshold {fmt(rule.threshold)}; waiting {waiting}"
        return Step(pending, True, reason)

    if s == State.PENDING:
        if not breaching:
            reason = f"value {fmt(value)} back within threshold {fmt(rule.threshold)}"
            return Step(InstanceState(State.INACTIVE), True, reason)
        since = current.pending_since or now
        if now - since >= for_span:
            fired = replace(current, state=State.FIRING, fired_at=now, last_active_at=now)
            reason = (
                f"value {fmt(value)} {cmp} threshold {fmt(rule.threshold)} "
                f"for {readable.span((now - since).total_seconds())}"
            )
            return Step(fired, True, reason)
        return Step(replace(current, last_active_at=now), False, "still pending")

    # FIRING
    if holding:
        return Step(replace(current, last_active_at=now), False, "still firing")
    last = current.last_active_at or current.fired_at or now
    if now - last < timedelta(seconds=rule.keep_firing_for_s):
        return Step(
            current, False, f"held by keep_firing_for ({readable.span(rule.keep_firing_for_s)})"
        )
    back = "below" if rule.direction == Direction.ABOVE else "above"
    reason = f"value {fmt(value)} back {back} the resolve threshold {fmt(rule.resolve)}"
    return Step(replace(current, state=State.RESOLVED, resolved_at=now), True, reason)
