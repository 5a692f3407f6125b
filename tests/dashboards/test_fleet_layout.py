"""The fleet tables at 1,440 px with live data in every cell: no column pushed out of view."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.models import AlertInstance, Rule
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic
from tests.support import browser_login, sideways_tables

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser_page, live_server, owner):
    browser_page.set_viewport_size({"width": 1440, "height": 900})
    browser_login(browser_page, live_server.url, "alice", "pw-alice-123")
    browser_page.base = live_server.url
    return browser_page


@pytest.fixture
def busy_fleet(team):
    """Services whose every cell is full: live figures, a changed workload, firing and pending
    alerts, long names."""
    now = timezone.now()
    for i in range(3):
        svc = make_service(team, f"a-service-with-a-rather-long-name-{i}",
                           name=f"Retrieval-augmented answers, long name {i}")  # fmt: skip
        make_baseline(svc, qps=1.0, output_tps=800.0, input_tps=500.0)
        seed_traffic(service=svc, host=f"h{i}", start=now - timedelta(minutes=70), minutes=68)
        rule = Rule.objects.create(service=svc, name="P99", kind="p99_e2e", threshold=1)
        for n, state in enumerate(("firing", "pending")):
            AlertInstance.objects.create(
                rule=rule, service=svc, fingerprint=f"{i}-{n}", state=state, threshold=1,
                last_evaluated_at=now,
            )  # fmt: skip


def test_the_fleet_table_shows_its_last_column_at_1440_px(page, busy_fleet):
    page.goto(f"{page.base}/")
    page.wait_for_selector("table.fleet [data-workload]")
    assert sideways_tables(page) == []


def test_the_fleet_dashboard_table_shows_its_last_column_at_1440_px(page, busy_fleet):
    page.goto(f"{page.base}/dashboards/")
    page.wait_for_selector("table.fleet-dash td[data-figure=alerts] .badge-warn")
    assert sideways_tables(page) == []


def test_at_390_px_the_fleet_table_says_it_scrolls_sideways(page, team):
    # On a phone the table was cut after its second column with nothing saying more were there.
    make_baseline(make_service(team, "phone-svc"), qps=1.0)
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{page.base}/")
    hint = page.locator(".scroll-hint")
    hint.wait_for()
    assert re.fullmatch(r"Scroll sideways: \d+ more columns →", hint.inner_text())
