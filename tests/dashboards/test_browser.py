"""End to end in headless Chromium: the dashboards draw their Plotly charts, with no console
error and no page error. Set PERFHUB_SCREENSHOTS=<dir> to keep a screenshot of each page."""

from datetime import timedelta

import pytest
from django.utils import timezone

from dossiers.models import ConfigVersion
from tests.factories.catalog import make_baseline, make_load_test, make_service
from tests.factories.traffic import seed_traffic
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PLOT = ".js-plotly-plot .main-svg"


@pytest.fixture
def seeded(team, service, owner):
    now = timezone.now()
    make_baseline(service)
    seed_traffic(service=service, start=now - timedelta(minutes=50), minutes=45)
    seed_traffic(
        service=service, host="gpu-host-2", start=now - timedelta(minutes=50), minutes=45,
        e2e_ms=1600, sm_active=None, dram_active=None,
    )  # fmt: skip
    other = make_service(team, "embed-1b", slo_p99_e2e_ms=300)
    seed_traffic(service=other, host="gpu-host-3", start=now - timedelta(minutes=50), minutes=45,
                 e2e_ms=250, tokens_per_second=900)  # fmt: skip
    ConfigVersion.objects.create(service=service, version=1, config={"max_num_seqs": 16})
    return service


def _login(page, base_url):
    browser_login(page, base_url, "alice", "pw-alice-123")


def test_fleet_and_service_dashboards_draw_charts_without_errors(browser_page, live_server, seeded):
    page = browser_page
    problems = page.problems
    _login(page, live_server.url)

    page.goto(f"{live_server.url}/dashboards/?range=1h")
    page.wait_for_selector(PLOT, timeout=15000)
    assert page.locator(".js-plotly-plot").count() == 3
    screenshot(page, "fleet")

    page.goto(f"{live_server.url}/dashboards/services/chat-7b/?range=1h")
    page.wait_for_selector(PLOT, timeout=15000)
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 8")
    page.wait_for_selector(".dash-timeline", timeout=5000)
    screenshot(page, "service")

    assert problems == []


def test_an_empty_service_dashboard_draws_its_empty_states(browser_page, live_server, owner,
                                                           service):  # fmt: skip
    page = browser_page
    problems = page.problems
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/dashboards/services/chat-7b/")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 8")
    assert page.get_by_text("is an agent pushing for chat-7b?").count() >= 1
    screenshot(page, "service-empty")
    assert problems == []


def test_the_load_test_comparison_draws_bars_and_histograms(browser_page, live_server, owner,
                                                             service):  # fmt: skip
    import numpy as np

    rng = np.random.default_rng(3)
    source = make_load_test(service, "v0.6.3 run", e2e=list(rng.lognormal(6.7, 0.4, 2000)))
    make_baseline(service, source_load_test=source)
    candidate = make_load_test(
        service, "v0.7.0 rc1", e2e=list(rng.lognormal(6.9, 0.5, 2000)), e2e_p50_ms=1000.0,
        e2e_p90_ms=1500.0, e2e_p99_ms=2200.0, ttft_p50_ms=180.0, ttft_p99_ms=420.0,
    )  # fmt: skip
    page = browser_page
    problems = page.problems
    _login(page, live_server.url)
    url = f"{live_server.url}/dashboards/services/chat-7b/loadtests/compare/?candidate="
    page.goto(f"{url}{candidate.pk}")
    page.wait_for_function("() => document.querySelectorAll('.js-plotly-plot').length === 4")
    screenshot(page, "compare")
    assert problems == []


def test_the_dossier_page_embeds_live_charts_and_the_timeline(browser_page, live_server, seeded):
    page = browser_page
    problems = page.problems
    _login(page, live_server.url)
    page.goto(f"{live_server.url}/services/chat-7b/")
    page.wait_for_selector(f"#live-panels {PLOT}", timeout=15000)
    page.wait_for_function(
        "() => document.querySelectorAll('#live-panels .js-plotly-plot').length === 3"
    )
    page.wait_for_selector("#dossier-timeline-extra .dash-timeline", timeout=5000)
    screenshot(page, "dossier")
    assert problems == []
