"""Layout faults a new user met, each checked in headless Chromium at 1,400 px wide."""

from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.services import ensure_default_rules
from loadtests.importing import import_loadtest_file
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import seed_traffic
from tests.support import browser_login, sideways_tables

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(browser_page, live_server, owner):
    browser_login(browser_page, live_server.url, "alice", "pw-alice-123")
    browser_page.base = live_server.url
    return browser_page


def test_the_alert_pages_name_alerts_once_in_the_main_navigation(page, service):
    page.goto(f"{page.base}/alerts/rules/")
    assert page.locator("nav.mainnav a", has_text="Alerts").count() == 1
    assert page.locator("nav.mainnav a[aria-current=page]").inner_text() == "Alerts"


def test_the_load_test_runs_table_shows_every_column_at_1400_px(page, service, fixtures_dir):
    sweep = (fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl").read_bytes()
    import_loadtest_file(service=service, content=sweep, filename="sweep.jsonl")
    page.goto(f"{page.base}/services/{service.slug}/loadtests/")
    page.wait_for_selector("table.runs")
    assert sideways_tables(page) == []


def test_the_fleet_table_shows_every_column_at_1400_px(page, team):
    for i in range(4):
        svc = make_service(team, f"fleet-wide-service-with-a-long-name-{i}")
        make_baseline(svc, qps=1.0)
    page.goto(f"{page.base}/")
    page.wait_for_selector("table.fleet")
    assert sideways_tables(page) == []


def test_the_live_diagnosis_range_form_stays_on_one_line(page, team):
    svc = make_service(team, "diag-svc")
    page.goto(f"{page.base}/dashboards/services/{svc.slug}/diagnosis/")
    form = page.locator("form.range-picker")
    box = form.bounding_box()
    assert box is not None and box["height"] < 90


def test_the_fleet_cost_scatter_keeps_every_label_inside_its_chart(page, team):
    now = timezone.now()
    for i, (price, tps) in enumerate(((10, 300.0), (10, 3000.0), (10, 30000.0))):
        svc = make_service(team, f"scatter-{i}", name=f"Scatter service number {i}",
                           gpu_hour_price=price)  # fmt: skip
        seed_traffic(service=svc, host=f"h{i}", start=now - timedelta(hours=2), minutes=110,
                     tokens_per_second=tps)  # fmt: skip
        ensure_default_rules(svc)
    page.goto(f"{page.base}/dashboards/?range=24h")
    page.wait_for_selector(".js-plotly-plot .textpoint text", timeout=30000)
    outside = page.evaluate(
        """Array.from(document.querySelectorAll('.js-plotly-plot')).flatMap(plot => {
             const frame = plot.getBoundingClientRect();
             return Array.from(plot.querySelectorAll('.textpoint text')).map(t => {
               const b = t.getBoundingClientRect();
               return (b.left < frame.left || b.right > frame.right) ? t.textContent : null;
             }).filter(Boolean);
           })"""
    )
    assert outside == []


def test_the_favicon_address_browsers_ask_for_answers(page):
    response = page.goto(f"{page.base}/favicon.ico")
    assert response.ok and "svg" in response.headers["content-type"]


def _page_scrolls_sideways(page) -> bool:
    return page.evaluate(
        "document.documentElement.scrollWidth > document.documentElement.clientWidth + 1"
    )


def test_the_main_navigation_wraps_on_a_390_px_phone(page, service):
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{page.base}/")
    page.wait_for_selector("table.fleet")
    assert not _page_scrolls_sideways(page)
    nav = page.locator("nav.mainnav").bounding_box()
    assert nav is not None and nav["x"] + nav["width"] <= 390


def test_a_wide_sweep_table_scrolls_in_its_own_box_on_a_390_px_phone(page, service, fixtures_dir):
    sweep = (fixtures_dir / "loadtests" / "vllm-bench-concurrency-sweep.jsonl").read_bytes()
    import_loadtest_file(service=service, content=sweep, filename="sweep.jsonl")
    page.set_viewport_size({"width": 390, "height": 800})
    page.goto(f"{page.base}/services/{service.slug}/loadtests/")
    page.click("a[href$='/sweep/']")
    page.wait_for_selector("table.data")
    assert not _page_scrolls_sideways(page)


def test_a_long_unbroken_name_in_a_paragraph_does_not_widen_the_page_at_390_px(page, team):
    # The dossier scrolled sideways on a phone: the live error rate names its counter,
    # `vllm:request_success_total{finished_reason="error"}`, one word 50 characters long.
    long_name = (
        'vllm:request_success_total{finished_reason="error"},vllm:admission_rejections_total'
    )
    svc = make_service(team, "phone-dossier", summary=f"Errors counted from {long_name}.")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{page.base}/services/{svc.slug}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
