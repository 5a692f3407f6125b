"""The planner page: the plan for the service's SLOs, and a bad field named, never a 500."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.models import ServiceMergedRollup

pytestmark = pytest.mark.django_db


def test_the_page_plans_for_the_service_slo_by_default(client, owner, swept):
    client.force_login(owner)
    page = client.get(f"/services/{swept.slug}/planner/", {"load": "10"}).content.decode()
    assert "TTFT P99 ≤ 500 ms" in page and "the service's SLOs" in page


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"slo": "ttft_p99_ms=soon"}, "slo"),
        ({"headroom": "1.5"}, "headroom"),
        ({"load": "0"}, "load"),
        ({"load": "5", "growth": "2"}, "growth"),
    ],
)
def test_a_bad_field_is_named_on_the_page_with_400(client, owner, swept, query, named):
    client.force_login(owner)
    response = client.get(f"/services/{swept.slug}/planner/", query)
    assert response.status_code == 400
    assert f"{named}:" in response.content.decode()


def test_the_plan_reads_as_money_and_a_margin_percentage(client, owner, swept):
    swept.price_per_mtok = 2
    swept.save(update_fields=["price_per_mtok"])
    client.force_login(owner)
    query = {"load": "100", "slo": "ttft_p99_ms=500"}
    page = client.get(f"/services/{swept.slug}/planner/", query).content.decode()
    cost = re.search(r"Cost per month</th><td><strong>([^<]+)</strong>", page).group(1)
    margin = re.search(r"Margin at the service's price</th><td><strong>([^<]+)</strong>", page)
    assert re.fullmatch(r"\d{1,3}(,\d{3})+", cost), cost
    assert re.fullmatch(r"-?\d+\.\d%", margin.group(1)), margin.group(1)


def test_the_binding_objective_is_named_as_people_read_it_once(client, owner, swept):
    client.force_login(owner)
    query = {"load": "10", "slo": "ttft_p99_ms=500"}
    page = client.get(f"/services/{swept.slug}/planner/", query).content.decode()
    row = re.search(r"Limited by</th><td>(.*?)</td>", page).group(1)
    assert row == "TTFT P99 ≤ 500 ms", row


def test_a_limit_the_sweep_never_reaches_says_measure_beyond_in_place_of_a_binding_one(
    client, owner, swept
):
    client.force_login(owner)
    query = {"load": "10", "slo": "ttft_p99_ms=100000"}
    page = client.get(f"/services/{swept.slug}/planner/", query).content.decode()
    row = re.search(r"Limited by</th><td>(.*?)</td>", page).group(1)
    assert row.startswith("— <span") and "measure beyond" in row, row


def test_plan_figures_carry_the_digits_their_size_warrants(client, owner, swept):
    client.force_login(owner)
    query = {"load": "10", "slo": "ttft_p99_ms=500"}
    page = client.get(f"/services/{swept.slug}/planner/", query).content.decode()
    row = re.search(r"highest concurrency</th><td>(.*?)</td>", page, re.S).group(1)
    figures = re.findall(r"\d[\d,]*(?:\.\d+)?", row.split("interval")[0])
    # Concurrency in the tens reads 35.8, not 35.80; the level (80%) is not a figure here.
    assert figures and all(
        len(f.split(".")[1]) == (1 if float(f.replace(",", "")) >= 10 else 2)
        for f in figures[:-1]
        if "." in f
    ), row


def test_the_live_load_says_how_many_of_the_windows_hours_had_traffic(client, owner, swept):
    # The demo's plan said "337 hourly request rates over the last 28 days" for a service with
    # 14 days of history: the reader took it for four weeks of traffic.
    now = timezone.now().replace(minute=0, second=0, microsecond=0)
    ServiceMergedRollup.objects.bulk_create(
        ServiceMergedRollup(service=swept, resolution_s=3600, start=now - timedelta(hours=h), qps=5)
        for h in range(1, 49)
    )
    client.force_login(owner)
    page = client.get(f"/services/{swept.slug}/planner/").content.decode()
    assert "of the last 28 days (48 hours with traffic of 672)" in page


def test_a_load_in_the_thousands_reads_with_a_thousands_separator(client, owner, swept):
    # "5552.00 req/s" beside "5,552 USD": the planner read numbers unlike every other page.
    client.force_login(owner)
    query = {"load": "5552", "slo": "ttft_p99_ms=500"}
    page = client.get(f"/services/{swept.slug}/planner/", query).content.decode()
    row = re.search(r"Load planned for</th><td>(.*?)</td>", page).group(1)
    assert row.startswith("<strong>5,552</strong> req/s"), row


def test_the_same_model_table_reads_the_per_replica_rate_as_the_plan_above_it(client, owner, chat):
    # The demo's table said 28.73 req/s under a plan that said 28.7 for the same replica.
    client.force_login(owner)
    page = client.get(f"/services/{chat.slug}/planner/", {"load": "50"}).content.decode()
    rate = re.search(r"highest request rate</th><td><strong>([^<]+)</strong>", page).group(1)
    table = page.split("The same model elsewhere")[1]
    assert f'<td class="num">{rate}</td>' in table, rate
