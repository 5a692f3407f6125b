"""The planner page in headless Chromium: the curves draw, the plan table reads, an edited SLO
re-plans."""

import pytest

from tests.support import browser_login

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_the_planner_page_draws_the_curves_and_replans_for_an_edited_slo(
    live_server, browser_page, owner, swept
):
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/services/{swept.slug}/planner/?load=10")
    page.wait_for_selector("#planner-chart .main-svg")
    assert "Replicas" in page.locator("#plan-table").inner_text()

    page.fill("input[name=slo]", "ttft_p99_ms=300")
    page.click("button:has-text('Plan')")
    page.wait_for_selector("#planner-chart .main-svg")
    assert "TTFT P99 ≤ 300 ms" in page.locator("#plan-table").inner_text()
    assert page.problems == []


@pytest.mark.django_db(transaction=True)
def test_each_chart_of_the_planner_spans_its_curves_and_slo_lines_not_its_labels(
    live_server, browser_page, owner, swept
):
    """An SLO line's label once stretched its log axis to 10^limit (a 50 ms TPOT line: 1e50),
    flattening the row's curves against the floor."""
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/services/{swept.slug}/planner/?slo=tpot_p99_ms%3D50&load=10")
    page.wait_for_selector("#planner-chart .main-svg")
    tops = page.evaluate(
        """() => Object.entries(document.getElementById('planner-chart')._fullLayout)
            .filter(([k, v]) => k.startsWith('yaxis') && v.type === 'log')
            .map(([k, v]) => v.range[1])"""
    )
    assert tops, "no log latency axis drawn"
    assert max(tops) < 6, tops  # log10 of the axis top: below 1,000 s for any latency here
    assert page.problems == []
