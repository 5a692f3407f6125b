"""The plan's JSON (API and `plan_capacity --json`) and the command's text name the reverted
experiments whose change the plan's sweep carries (demo: support-chat-7b's max_num_seqs=512
sweep, measured and turned back)."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from loadtests.sweeps import sweeps_for_service

pytestmark = pytest.mark.django_db


def sweep_run(chat, max_num_seqs: str | None) -> int:
    """A run of the demo sweep with that max_num_seqs (None: the default configuration)."""
    sweeps = sweeps_for_service(chat)
    return next(s for s in sweeps if s.parameters.get("max_num_seqs") == max_num_seqs).key


@pytest.fixture
def api(client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-1"))
    return client


def test_the_api_plan_of_the_reverted_sweep_lists_the_experiment(api, chat, reverted):
    query = {"sweep": sweep_run(chat, "512"), "load": "50"}
    response = api.get(f"/api/v1/services/{chat.slug}/plan/", query)
    (listed,) = response.json()["reverted_by"]
    assert listed == {
        "id": reverted.pk,
        "title": reverted.title,
        "variable": "max_num_seqs",
        "value": "512",
        "url": f"http://testserver{reverted.get_absolute_url()}",
    }


def test_the_api_plan_of_a_clean_sweep_lists_none(api, chat, reverted):
    query = {"sweep": sweep_run(chat, None), "load": "50"}
    response = api.get(f"/api/v1/services/{chat.slug}/plan/", query)
    assert response.status_code == 200 and response.json()["reverted_by"] == []


def test_the_command_text_names_the_reverted_change(chat, reverted):
    out = StringIO()
    run = sweep_run(chat, "512")
    call_command("plan_capacity", "--service", chat.slug, "--sweep", str(run), stdout=out)
    assert (
        "this sweep's configuration carries a change an experiment reverted: "
        f"max_num_seqs=512 ({reverted.title})"
    ) in out.getvalue().splitlines()


def test_the_plan_of_the_clean_sweep_flags_the_other_sweep_that_was_reverted(chat, reverted):
    out = StringIO()
    run = sweep_run(chat, None)
    call_command("plan_capacity", "--service", chat.slug, "--sweep", str(run), "--json", stdout=out)
    (other,) = json.loads(out.getvalue())["other_sweeps"]
    assert sweep_run(chat, "512") in other["runs"]
    assert [x["id"] for x in other["reverted_by"]] == [reverted.pk]


def test_the_command_text_flags_the_other_sweep_that_was_reverted(chat, reverted):
    out = StringIO()
    run = sweep_run(chat, None)
    call_command("plan_capacity", "--service", chat.slug, "--sweep", str(run), stdout=out)
    (line,) = [line for line in out.getvalue().splitlines() if "other sweep" in line]
    assert line.endswith(f"carries a reverted change: max_num_seqs=512 ({reverted.title})")
