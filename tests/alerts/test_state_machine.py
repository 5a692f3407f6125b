"""The pure state machine (analysis.alerting): no database, plain values."""

from datetime import UTC, datetime, timedelta

import pytest

from analysis.alerting import (
    Direction,
    Health,
    InstanceState,
    Observation,
    State,
    Thresholds,
    step,
)

T = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
ABOVE = Thresholds(Direction.ABOVE, threshold=100, resolve_threshold=90, for_s=120)


def run(rule, values, state=None):
    state = state or InstanceState()
    states = []
    for i, v in enumerate(values):
        obs = Observation(Health.OK, value=v) if v is not None else Observation(Health.NO_DATA)
        state = step(rule, state, obs, T + timedelta(minutes=i)).state
        states.append(state.state)
    return states


def test_it_waits_out_for_before_firing():
    assert run(ABOVE, [101, 101, 101]) == [State.PENDING, State.PENDING, State.FIRING]


def test_it_fires_at_once_without_for():
    rule = Thresholds(Direction.ABOVE, threshold=100, for_s=0)
    assert run(rule, [101]) == [State.FIRING]


def test_it_cancels_pending_when_the_condition_clears():
    assert run(ABOVE, [101, 99]) == [State.PENDING, State.INACTIVE]


def test_it_holds_firing_above_the_resolve_threshold():
    assert run(ABOVE, [101, 101, 101, 95, 99, 91])[-1] == State.FIRING


def test_it_resolves_past_the_resolve_threshold():
    assert run(ABOVE, [101, 101, 101, 89])[-1] == State.RESOLVED


def test_keep_firing_for_holds_after_the_value_recovers():
    rule = Thresholds(Direction.ABOVE, threshold=100, for_s=0, keep_firing_for_s=150)
    assert run(rule, [101, 50, 50, 50]) == [
        State.FIRING, State.FIRING, State.FIRING, State.RESOLVED,
    ]  # fmt: skip


def test_unknown_values_keep_a_firing_alert_firing():
    rule = Thresholds(Direction.ABOVE, threshold=100, for_s=0)
    assert run(rule, [101, None, None]) == [State.FIRING] * 3


def test_unknown_values_cancel_pending():
    assert run(ABOVE, [101, None]) == [State.PENDING, State.INACTIVE]


def test_below_rules_fire_under_the_threshold():
    rule = Thresholds(Direction.BELOW, threshold=0.2, resolve_threshold=0.25, for_s=0)
    assert run(rule, [0.1, 0.22, 0.3]) == [State.FIRING, State.FIRING, State.RESOLVED]


def test_a_false_gate_neither_fires_nor_holds():
    rule = Thresholds(Direction.BELOW, threshold=0.5, for_s=0)
    fired = step(rule, InstanceState(), Observation(Health.OK, value=0.1, gate=False), T)
    assert fired.state.state == State.INACTIVE


def test_it_rejects_a_resolve_threshold_on_the_wrong_side():
    with pytest.raises(ValueError, match="resolve_threshold"):
        Thresholds(Direction.ABOVE, threshold=100, resolve_threshold=110)


def test_a_resolved_alert_can_go_pending_again():
    assert run(ABOVE, [101, 101, 101, 50, 101])[-1] == State.PENDING
