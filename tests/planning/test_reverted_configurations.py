"""The planner says where a configuration carries a change an experiment reverted (demo:
support-chat-7b's max_num_seqs=512 sweep, the cheapest that holds the SLO, was reverted)."""

import pytest

from planning.plan import alternatives, cheapest_caveat, plan_for, reverted_by

pytestmark = pytest.mark.django_db


def test_the_sweep_with_the_reverted_setting_is_found_and_the_default_one_is_not(chat, reverted):
    plan = plan_for(chat, load=50)
    sweeps = [plan.sweep, *plan.other_sweeps]
    found = {s.parameters.get("max_num_seqs"): reverted_by(chat, s) for s in sweeps}
    assert found["512"] == [reverted] and found[None] == []


def test_the_cheapest_row_holding_the_slo_is_flagged_when_reverted(chat, reverted):
    rows = alternatives(plan_for(chat, load=50))
    caveat = cheapest_caveat(rows)
    assert caveat is rows[0] and caveat.reverted_by == (reverted,)


def test_the_plan_math_and_order_are_unchanged_by_the_caveat(chat):
    rows = alternatives(plan_for(chat, load=50))
    costs = [r.plan.cost_per_month.value for r in rows if r.holds]
    assert costs == sorted(costs)
