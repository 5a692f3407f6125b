"""The same model on other GPU types: planned for the same load and objectives, cheapest first;
and the fleet's plans page."""

from decimal import Decimal

import pytest
from django.core.management import call_command

from dossiers.models import Service
from planning.plan import alternatives, plan_for
from tests.factories.catalog import bare_service

pytestmark = pytest.mark.django_db


@pytest.fixture
def pricier_twin(swept, fixtures_dir):
    """The same model and sweep on a GPU three times the price."""
    twin = Service.objects.create(
        slug="chat-7b-h100",
        name="Chat 7B on H100",
        team=swept.team,
        model_name=swept.model_name,
        model_params_b=swept.model_params_b,
        engine="vllm",
        gpu_model="NVIDIA H100 80GB",
        gpu_hour_price=Decimal("30"),
        price_per_mtok=Decimal("5"),
        slo_p99_ttft_ms=500,
    )
    path = fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl"
    call_command("import_loadtest", str(path), "--service", twin.slug, stdout=None)
    return twin


def test_services_serving_the_same_model_are_ranked_by_cost(swept, pricier_twin):
    from planning.objectives import parse_objectives

    plan = plan_for(swept, objectives=parse_objectives(["ttft_p99_ms=300"]), load=10)
    rows = alternatives(plan)
    assert [r.service.slug for r in rows] == [swept.slug, pricier_twin.slug]
    assert rows[1].plan.cost_per_month.value == pytest.approx(3 * rows[0].plan.cost_per_month.value)


def test_a_service_without_a_sweep_is_listed_last_saying_why(swept, pricier_twin):
    pricier_twin.load_tests.all().delete()
    rows = alternatives(plan_for(swept, load=10))
    assert rows[-1].service == pricier_twin and "no usable sweep" in rows[-1].problem


def test_the_fleet_page_lists_every_service_with_its_plan_or_why_not(client, owner, swept):
    client.force_login(owner)
    bare_service(swept.team, "no-sweep", engine="vllm", gpu_model="L4")
    page = client.get("/planner/").content.decode()
    assert "Chat 7B" in page and "no usable sweep" in page


def test_the_fleet_page_says_what_its_bracketed_range_and_its_cost_are(client, owner, swept):
    # "4 (4-5)" and "Cost / month" stood unexplained: the range is the 80% interval, the cost
    # is the plan's (replicas needed), not today's.
    client.force_login(owner)
    page = client.get("/planner/").content.decode()
    assert "in brackets, its 80% interval" in page
    assert "Cost / month of the plan" in page


def test_the_fleet_page_plans_one_page_of_services_at_a_time(client, owner, swept, monkeypatch):
    monkeypatch.setattr("planning.views.PLANS_PER_PAGE", 1)
    client.force_login(owner)
    bare_service(swept.team, "no-sweep", engine="vllm", gpu_model="L4")
    first = client.get("/planner/").content.decode()
    second = client.get("/planner/", {"page": 2}).content.decode()
    assert "Chat 7B" in first and "no usable sweep" not in first
    assert "no usable sweep" in second and "Services 2\u20132 of 2" in second


def test_the_fleet_page_marks_a_plan_whose_sweep_carries_a_reverted_change(client, owner, swept):
    from dossiers import services
    from dossiers.models import Experiment
    from loadtests.importing import baseline_of_run

    before, after = swept.load_tests.order_by("pk")[:2]
    experiment = services.experiment_record(
        service=swept,
        title="max_num_seqs 256 to 512",
        hypothesis="More sequences a step serve more.",
        variable_key="max_num_seqs",
        value_from="256",
        value_to="512",
        before=baseline_of_run(load_test=before),
        after=baseline_of_run(load_test=after),  # a run of the sweep the plan reads
        verdict=Experiment.Verdict.REVERTED,
        run_on=after.measured_at.date(),
    )
    client.force_login(owner)
    page = client.get("/planner/").content.decode()
    (row,) = [r for r in page.split("<tr")[1:] if "Chat 7B" in r]
    assert ">reverted</span>" in row and f'href="{experiment.get_absolute_url()}"' in row
