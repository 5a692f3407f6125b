"""A service measured in two configurations has a sweep for each: the plan says which it read,
lists the others, and plans from another when given one of its runs (`--sweep`, `?sweep=`).

The runs are a real `vllm bench sweep serve` folder: --max-num-seqs 1 and 4, each at
concurrency 1, 2 and 4 (tests/fixtures/real/SOURCES.md)."""

import json
import re
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from loadtests.importing import import_loadtest_files
from loadtests.models import LoadTest
from loadtests.sweeps import sweeps_for_service
from planning.objectives import parse_objectives
from planning.plan import alternatives, plan_for

pytestmark = pytest.mark.django_db

FOLDER = (
    Path(__file__).resolve().parents[1]
    / "fixtures/real/vllm-bench/e2e-vllm-0.32.0-cpu-sweep-max_num_seqs.tar.gz"
)
SLO = ("--slo", "e2e_p99_ms=400", "--load", "30")


@pytest.fixture
def two_configurations(service):
    import_loadtest_files(service=service, files=[(FOLDER.read_bytes(), FOLDER.name)])
    return service


def run_with(service, max_num_seqs: int) -> LoadTest:
    runs = LoadTest.objects.filter(service=service).order_by("pk")
    return next(r for r in runs if r.extra["overrides"]["max_num_seqs"] == max_num_seqs)


def plan_json(service, *args) -> dict:
    out = StringIO()
    call_command("plan_capacity", "--service", service.slug, *SLO, *args, "--json", stdout=out)
    return json.loads(out.getvalue())


def test_the_plan_names_the_configuration_it_read_and_lists_the_other(two_configurations):
    plan = plan_json(two_configurations)
    (other,) = plan["other_sweeps"]
    read = [plan["sweep"]["configuration"]["overrides"], other["configuration"]["overrides"]]
    assert sorted(read) == ["max_num_seqs=1", "max_num_seqs=4"]


def test_the_plans_text_says_how_to_plan_from_the_other_sweep(two_configurations):
    out = StringIO()
    call_command("plan_capacity", "--service", two_configurations.slug, *SLO, stdout=out)
    (line,) = [line for line in out.getvalue().splitlines() if "other sweep" in line]
    assert "max_num_seqs=1" in line and "--sweep" in line


def test_sweep_plans_from_the_sweep_holding_that_run(two_configurations):
    run = run_with(two_configurations, 1)
    plan = plan_json(two_configurations, "--sweep", str(run.pk))
    assert plan["sweep"]["configuration"]["overrides"] == "max_num_seqs=1"
    assert run.pk in plan["runs"]


def test_the_slower_configuration_holds_the_slo_at_a_lower_rate(two_configurations):
    """max_num_seqs 1 queues requests at concurrency 2 (P99 E2E 570 ms measured): it holds
    400 ms only below it; max_num_seqs 4 holds it to the sweep's end."""
    one = plan_json(two_configurations, "--sweep", str(run_with(two_configurations, 1).pk))
    four = plan_json(two_configurations, "--sweep", str(run_with(two_configurations, 4).pk))
    rate = "max_request_rate"
    assert one["per_replica"][rate]["value"] < four["per_replica"][rate]["value"]


def test_sweep_of_a_run_in_no_sweep_exits_2_with_one_line(two_configurations):
    with pytest.raises(CommandError) as raised:
        call_command("plan_capacity", "--service", two_configurations.slug, "--sweep", "999999")
    assert raised.value.returncode == 2
    assert "run 999999 is in no usable sweep" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_the_api_plans_from_the_sweep_given(client, owner, two_configurations):
    client.force_login(owner)
    run = run_with(two_configurations, 1)
    response = client.get(
        f"/api/v1/services/{two_configurations.slug}/plan/",
        {"slo": "e2e_p99_ms=400", "load": "30", "sweep": str(run.pk)},
    )
    assert response.json()["sweep"]["configuration"]["overrides"] == "max_num_seqs=1"


def test_the_api_names_a_sweep_that_is_no_number(client, owner, two_configurations):
    client.force_login(owner)
    response = client.get(f"/api/v1/services/{two_configurations.slug}/plan/", {"sweep": "x"})
    assert response.status_code == 400 and response.json()["detail"].startswith("sweep")


def test_the_page_offers_the_other_sweep(client, owner, two_configurations):
    client.force_login(owner)
    page = client.get(f"/services/{two_configurations.slug}/planner/", {"load": "30"})
    select = page.content.decode().partition('id="plan-sweep"')[2].partition("</select>")[0]
    assert "max_num_seqs=1" in select and "max_num_seqs=4" in select


def test_the_same_model_table_holds_each_configuration_cheapest_first(two_configurations):
    objectives = parse_objectives(["e2e_p99_ms=400"])
    rows = alternatives(plan_for(two_configurations, objectives=objectives, load=30))
    labels = [row.plan.sweep.configuration_label for row in rows]
    assert labels == ["tiny-llama / max_num_seqs=4", "tiny-llama / max_num_seqs=1"]


def test_the_page_names_each_configuration_in_the_same_model_table(
    client, owner, two_configurations
):
    client.force_login(owner)
    page = client.get(f"/services/{two_configurations.slug}/planner/", {"load": "30"})
    table = page.content.decode().partition('id="alternatives"')[2].partition("</table>")[0]
    assert "max_num_seqs=1" in table and "max_num_seqs=4" in table


def test_each_configuration_in_the_same_model_table_links_to_its_plan(
    client, owner, two_configurations
):
    client.force_login(owner)
    page = client.get(f"/services/{two_configurations.slug}/planner/", {"load": "30"})
    table = page.content.decode().partition('id="alternatives"')[2].partition("</table>")[0]
    linked = {int(key) for key in re.findall(r'href="[^"]*\?sweep=(\d+)"', table)}
    assert linked == {sweep.key for sweep in sweeps_for_service(two_configurations)}


def test_a_configuration_that_cannot_be_planned_is_a_row_saying_why(two_configurations):
    """The max_num_seqs 1 runs carry no end-to-end figures: that row says so, and the page
    still plans the other (never a 500)."""
    fields = [f.attname for f in LoadTest._meta.concrete_fields if f.attname.startswith("e2e_")]
    for run in LoadTest.objects.filter(service=two_configurations):
        if run.extra["overrides"]["max_num_seqs"] == 1:
            LoadTest.objects.filter(pk=run.pk).update(**dict.fromkeys(fields))
    objectives = parse_objectives(["e2e_p99_ms=400"])
    rows = alternatives(plan_for(two_configurations, objectives=objectives, load=30))
    assert [row.plan is None for row in rows] == [False, True]
    assert "carry none of the objectives" in rows[1].problem
