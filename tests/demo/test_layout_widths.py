"""In Chromium, the demo's pages at a desktop, a laptop and a tablet width: no table sticks out
of its card or of the page (which then scrolled sideways as a whole: the fleet's plans at
1,440 px, a service's load tests at 1,024), unless it scrolls inside its own box, and the fleet's
plans and the fleet's table show every column at 1,440 px."""

from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.models import HOUR, ServiceMergedRollup
from dashboards.management.commands.run_demo import DEMO_LOGIN
from dossiers.demo import build_demo
from loadtests.demo import add_demo_loadtests
from tests.factories.traffic import seed_traffic
from tests.support import browser_login, screenshot, sideways_tables

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Each table shown (every <details> opened) that no box between it and its card (or the page)
# clips: how far it runs past that card's right edge.
STICKING_OUT = """() => {
  document.querySelectorAll('details').forEach(d => { d.open = true; });
  return Array.from(document.querySelectorAll('main table')).flatMap(table => {
    for (let box = table.parentElement; box; box = box.parentElement) {
      if (getComputedStyle(box).overflowX !== 'visible') return [];
      if (box.matches('.card, main')) {
        const over = table.getBoundingClientRect().right - box.getBoundingClientRect().right;
        const name = table.caption ? table.caption.innerText : table.className;
        return over > 1 ? [`${name.slice(0, 40)}: ${Math.round(over)} px`] : [];
      }
    }
    return [];
  });
}"""
SERVICES = ("code-review-13b", "support-chat-7b")
PAGES = [
    "/",
    "/dashboards/",
    "/alerts/",
    "/planner/",
    *(
        f"/services/{slug}/{tab}"
        for slug in SERVICES
        for tab in ("", "onboarding/", "loadtests/", "gate-runs/", "planner/")
    ),
]


@pytest.fixture
def demo_page(browser_page, live_server):
    """The demo fleet with its sweeps, live traffic in the last hour (every live line of the
    fleet, the dashboards and the dossiers filled) and two days of hourly traffic before it (a
    live peak to plan for: every column of the plans filled, today's replicas judged)."""
    services = list(build_demo().services.values())
    add_demo_loadtests(services)
    now = timezone.now()
    for s in services:
        seed_traffic(service=s, host=f"live-{s.slug}", start=now - timedelta(minutes=70),
                     minutes=68)  # fmt: skip
    hour = now.replace(minute=0, second=0, microsecond=0)
    ServiceMergedRollup.objects.bulk_create(
        (
            ServiceMergedRollup(
                service=s, resolution_s=HOUR, start=hour - timedelta(hours=h), qps=40
            )
            for s in services
            for h in range(1, 49)
        ),
        ignore_conflicts=True,  # the hours the live traffic's roll-up already wrote
    )
    browser_login(browser_page, live_server.url, *DEMO_LOGIN)
    browser_page.base = live_server.url
    return browser_page


def test_no_table_sticks_out_of_its_card_or_the_page_at_desktop_to_tablet_widths(demo_page):
    page = demo_page
    found = {}
    for width in (1440, 1024, 800):
        page.set_viewport_size({"width": width, "height": 900})
        for path in PAGES:
            page.goto(page.base + path)
            page.wait_for_load_state("networkidle")
            wide = page.evaluate("document.documentElement.scrollWidth")
            out = page.evaluate(STICKING_OUT) + ([f"page {wide} px"] if wide > width else [])
            if out:
                screenshot(page, f"sticking-out-{width}-{path.strip('/').replace('/', '-')}")
                found[f"{path} at {width} px"] = out
    assert found == {}


def test_the_fleets_plans_show_every_column_at_1440_px(demo_page):
    demo_page.set_viewport_size({"width": 1440, "height": 900})
    demo_page.goto(f"{demo_page.base}/planner/")
    demo_page.wait_for_selector("#fleet-plans td [data-provisioning]")
    assert sideways_tables(demo_page) == []


def test_the_fleet_table_shows_every_column_at_1440_px_with_live_lines(demo_page):
    # The demo's fleet table, its live lines on, was 88 px wider than a 1,440 px window.
    demo_page.set_viewport_size({"width": 1440, "height": 900})
    demo_page.goto(f"{demo_page.base}/")
    demo_page.wait_for_selector("table.fleet [data-window]")
    assert sideways_tables(demo_page) == []
