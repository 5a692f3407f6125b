"""The planner page says where a configuration carries a change an experiment reverted (demo:
support-chat-7b's max_num_seqs=512 sweep, the cheapest that holds the SLO, was reverted)."""

import re

import pytest

from planning.plan import plan_for

pytestmark = pytest.mark.django_db


@pytest.fixture
def page(chat, client, django_user_model):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-1"))
    return client.get(f"/services/{chat.slug}/planner/", {"load": "50"}).content.decode()


def alternative_rows(page: str) -> list[str]:
    table = re.search(r'<table class="data compact" id="alternatives">.*?</table>', page, re.S)
    return re.findall(r"<tr.*?</tr>", table.group(0), re.S)[1:]


def test_the_reverted_row_links_its_experiment(page, reverted):
    (row,) = [r for r in alternative_rows(page) if "max_num_seqs=512" in r.split("</td>")[4]]
    assert f'href="{reverted.get_absolute_url()}"' in row and "reverted" in row


def test_the_reverted_row_is_not_highlighted_as_the_pick(page):
    first = alternative_rows(page)[0]
    assert "max_num_seqs=512" in first and 'class="primary"' not in first


def test_the_table_does_not_call_a_reverted_row_cheapest_without_the_caveat(page, reverted):
    note = re.search(r'<p class="warning" role="note" id="cheapest-reverted">.*?</p>', page, re.S)
    assert note and f'href="{reverted.get_absolute_url()}"' in note.group(0)


def test_a_plan_of_the_reverted_sweep_says_so_above_its_figures(
    chat, reverted, client, django_user_model
):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw-root-1"))
    plan = plan_for(chat, load=50)
    sweep = next(s for s in [plan.sweep, *plan.other_sweeps] if s.parameters.get("max_num_seqs"))
    page = client.get(
        f"/services/{chat.slug}/planner/", {"sweep": sweep.key, "load": "50"}
    ).content.decode()
    note = re.search(r'<p class="warning" role="note" id="plan-reverted">.*?</p>', page, re.S)
    assert note and f'href="{reverted.get_absolute_url()}"' in note.group(0)
