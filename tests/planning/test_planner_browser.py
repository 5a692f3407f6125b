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
    assert "ttft_p99_ms" in page.locator("#plan-table").inner_text()
    assert page.problems == []
