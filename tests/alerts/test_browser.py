"""In headless Chromium: an alert's page draws its value against the threshold, with no
console error and no page error."""

import pytest
from django.urls import reverse

from tests.support import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FIRE = [3000] * 4  # pending, then firing after `for`


def test_the_alert_page_draws_its_chart(browser_page, live_server, owner, timeline, p99_rule):
    timeline.run(FIRE)
    alert = p99_rule.instances.get()
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")

    page.goto(live_server.url + reverse("alerts:alert_list"))
    page.click("text=P99 e2e above SLO")
    assert page.url.endswith(reverse("alerts:alert_detail", args=[alert.pk]))
    page.wait_for_selector(f"#alert-chart-{alert.pk} .main-svg", timeout=15000)
    assert page.locator(".js-plotly-plot").count() == 1
    assert page.problems == []
