"""A dossier a person can read, in headless Chromium at 1,440 x 900: a section menu that stays
in view, experiments collapsed to one line, and one timeline with filters, newest first."""

from datetime import UTC, datetime, timedelta

import pytest

from alerts.models import AlertEvent, Rule
from dossiers.models import Experiment
from dossiers.services import config_version_create
from tests.factories.catalog import make_baseline
from tests.support import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

T0 = datetime(2026, 11, 20, 10, 0, tzinfo=UTC)


@pytest.fixture
def dossier(service):
    before = make_baseline(service, label="batch 8", e2e_p99_ms=8400.0, is_current=False)
    after = make_baseline(service, label="batch 16", e2e_p99_ms=1150.0)
    Experiment.objects.create(
        service=service, title="Multi-step scheduling", hypothesis="The CPU loop stalls decode.",
        variable_key="num_scheduler_steps", value_from="1", value_to="8", before=before,
        after=after, run_on=(T0 - timedelta(days=3)).date(), verdict="adopted",
    )  # fmt: skip
    config_version_create(service=service, config={"num_scheduler_steps": 8})
    rule = Rule.objects.create(service=service, name="P99 e2e", kind="p99_e2e", threshold=2000)
    AlertEvent.objects.create(rule=rule, service=service, kind="firing", at=T0, value=2500,
                              threshold=2000)  # fmt: skip
    return service


@pytest.fixture
def page(browser_page, live_server, owner, dossier):
    browser_page.set_viewport_size({"width": 1440, "height": 900})
    browser_login(browser_page, live_server.url, "alice", "pw-alice-123")
    browser_page.goto(f"{live_server.url}/services/{dossier.slug}/")
    return browser_page


def test_the_section_menu_stays_in_view_at_the_bottom_of_the_page(page):
    page.evaluate("() => window.scrollTo(0, document.body.scrollHeight)")
    box = page.locator("[data-section-menu]").bounding_box()
    assert box is not None and 0 <= box["y"] < 10


def test_an_experiment_is_one_closed_line_with_title_verdict_and_change(page):
    card = page.locator("details.experiment-card").first
    assert card.get_attribute("open") is None
    summary = " ".join(card.locator(":scope > summary").text_content().split())
    # Its hypothesis names no figure ("P99 should fall"): the default headline, said so.
    assert summary == (
        "Multi-step scheduling adopted E2E P99 (ms) -7,250 ms (-86.3%) (no target figure named)"
    )


def test_the_timeline_hides_the_kinds_a_reader_unticks(page):
    page.wait_for_selector("[data-timeline-filters]", timeout=20000)
    page.locator("[data-timeline-filters] input[value=alert]").uncheck()
    shown = page.locator("ol.timeline li[data-group]:visible")
    groups = {shown.nth(i).get_attribute("data-group") for i in range(shown.count())}
    assert "alert" not in groups and {"deploy", "experiment"} <= groups


def test_the_timeline_lists_newest_first(page):
    page.wait_for_selector("ol.timeline li[data-group] time", timeout=20000)
    times = page.locator("ol.timeline li[data-group] time").evaluate_all(
        "items => items.map(t => t.getAttribute('datetime'))"
    )
    assert len(times) >= 3 and times == sorted(times, reverse=True)
