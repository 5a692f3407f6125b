"""The plan against the replicas running today: short, maybe short, spare or enough."""

import math
import re
from io import StringIO

import pytest
from django.core.management import call_command

from planning.objectives import parse_objectives
from planning.plan import plan_for

pytestmark = pytest.mark.django_db

TTFT = parse_objectives(["ttft_p99_ms=500"])


def _plan(service, replicas: int, load: float):
    service.replicas = replicas
    service.save(update_fields=["replicas"])
    return plan_for(service, objectives=TTFT, load=load)


def test_replicas_that_cannot_carry_the_load_even_without_headroom_are_short(swept):
    plan = _plan(swept, 1, load=100)
    assert 100 / plan.per_replica.max_request_rate.value > 1
    assert plan.provisioning == ("bad", f"{plan.replicas.value - 1} short")


def test_replicas_that_carry_the_load_only_without_headroom_are_short_of_it(swept):
    plan = _plan(swept, 1, load=100)
    bare = math.ceil(100 / plan.per_replica.max_request_rate.value)
    plan = _plan(swept, bare, load=100)
    assert bare < plan.replicas.value  # 20% headroom needs more
    short = plan.replicas.value - bare
    assert plan.provisioning == ("warn", f"{short} short of 20% headroom")


def test_more_replicas_than_the_plans_high_end_are_spare(swept):
    plan = _plan(swept, 200, load=10)
    assert plan.replicas.high < 200
    assert plan.provisioning == ("info", f"{200 - plan.replicas.value} spare")


def test_as_many_replicas_as_planned_are_enough(swept):
    needed = _plan(swept, 1, load=100).replicas.value
    assert _plan(swept, needed, load=100).provisioning == ("ok", "")


def test_the_planner_page_flags_a_short_service(client, owner, swept):
    plan = _plan(swept, 1, load=100)
    client.force_login(owner)
    query = {"load": "100", "slo": "ttft_p99_ms=500"}
    page = client.get(f"/services/{swept.slug}/planner/", query).content.decode()
    short = plan.replicas.value - 1
    assert f'data-provisioning="bad">{short} short</span>' in page


def test_a_plan_from_a_sweep_that_never_reached_the_limit_says_only_up_to(swept):
    swept.replicas = 1
    swept.save(update_fields=["replicas"])
    plan = plan_for(swept, objectives=parse_objectives(["ttft_p99_ms=100000"]), load=100)
    assert plan.provisioning == ("warn", f"up to {plan.replicas.value - 1} short")


def test_the_command_says_how_todays_replicas_compare(swept):
    _plan(swept, 1, load=100)
    out = StringIO()
    args = ["--service", swept.slug, "--slo", "ttft_p99_ms=500", "--load", "100"]
    call_command("plan_capacity", *args, stdout=out)
    assert re.search(r"^today: 1 replica \(\d+ short\)$", out.getvalue(), re.M), out.getvalue()
