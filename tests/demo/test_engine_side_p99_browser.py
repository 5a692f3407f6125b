"""In Chromium: the fleet page draws RAG Answers' engine-side P99 across its histogram bucket
(5-10 s) as "SLO inside the bucket", not as a missed SLO at the interpolated 8.3 s."""

import pytest

from dashboards.management.commands.run_demo import DEMO_LOGIN
from dossiers.demo import build_demo
from tests.demo.test_engine_side_p99 import BUCKET, SLUG, push_engine_scrapes
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

P99_TRACES = """() => {
  const plot = document.querySelector('.js-plotly-plot');
  return plot.data.filter(t => t.y && t.y.includes('RAG Answers 70B') && t.name.startsWith('P99'))
    .map(t => {
      const i = t.y.indexOf('RAG Answers 70B');
      return {name: t.name, x: t.x[i], plus: t.error_x ? t.error_x.array[i] : null,
              minus: t.error_x ? t.error_x.arrayminus[i] : null};
    });
}"""


def test_the_fleet_page_draws_the_engine_p99_across_its_bucket(browser_page, live_server):
    push_engine_scrapes(build_demo().services[SLUG])
    page = browser_page
    browser_login(page, live_server.url, *DEMO_LOGIN)
    page.goto(f"{live_server.url}/dashboards/?range=1h")
    page.wait_for_selector(".js-plotly-plot .main-svg", timeout=15000)
    screenshot(page, "fleet-engine-p99")
    cell = page.locator(f'tr[data-service="{SLUG}"] td[data-figure="p99"]')
    assert BUCKET in cell.inner_text()
    (trace,) = page.evaluate(P99_TRACES)
    assert trace["name"].startswith("P99 bucket holds the SLO")
    assert (trace["x"] - trace["minus"], trace["x"] + trace["plus"]) == pytest.approx((5000, 10000))
    assert page.problems == []
