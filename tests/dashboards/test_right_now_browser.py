"""In headless Chromium: the fleet row and the top of the dossier say the one verdict right
now, before anything else, and a service with a firing SLO alert never reads as fine."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.models import AlertInstance, Rule
from dossiers.models import Slo
from tests.factories.catalog import make_service
from tests.factories.traffic import seed_traffic
from tests.support import browser_login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def fleet(team, service, owner):
    now = timezone.now()
    Slo.objects.create(service=service, name="Interactive", e2e_ms=5000, target_percent=99)
    seed_traffic(service=service, start=now - timedelta(minutes=40), minutes=35)
    rule = Rule.objects.create(
        service=service, name="SLO budget burn: slow (6x over 6 h)", kind="slo_burn",
        threshold=6, window_s=21600, severity="warning",
    )  # fmt: skip
    AlertInstance.objects.create(
        rule=rule, service=service, fingerprint="burning", state="firing", threshold=6,
        value=7.5, fired_at=now, pending_since=now, last_evaluated_at=now,
        labels={"service": service.slug, "slo": "1"},
    )  # fmt: skip
    calm = make_service(team, "embed-1b", slo_p99_e2e_ms=5000)
    seed_traffic(service=calm, host="gpu-host-3", start=now - timedelta(minutes=40), minutes=35,
                 e2e_ms=250)  # fmt: skip
    return service, calm


def test_the_fleet_row_gives_one_verdict_with_its_alerts(browser_page, live_server, fleet):
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/")
    burning = page.locator('tr[data-service="chat-7b"] td[data-right-now]')
    assert burning.get_attribute("data-right-now") == "burning budget"
    assert "1 warning firing" in burning.inner_text()
    calm = page.locator('tr[data-service="embed-1b"] td[data-right-now]')
    assert calm.get_attribute("data-right-now") == "meeting SLOs"
    # The verdict is the first figure of the row, right after the service's name.
    screenshot(page, "fleet-right-now")
    headers = page.locator("table.fleet thead th").all_inner_texts()
    assert headers[1].lower().startswith("right now")  # CSS sets headers in capitals
    assert page.problems == []


def test_the_dossier_opens_with_the_verdict_above_everything_else(browser_page, live_server, fleet):
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")
    page.goto(f"{live_server.url}/services/chat-7b/")
    verdict = page.locator("#right-now .right-now-card")
    verdict.wait_for(timeout=15000)
    screenshot(page, "dossier-right-now")
    assert verdict.get_attribute("data-verdict") == "burning budget"
    top = verdict.bounding_box()["y"]
    assert top < page.locator("section.summary").bounding_box()["y"]
    assert top < page.viewport_size["height"]  # seen without scrolling
    assert "SLO budget burn: slow" in verdict.inner_text()
    assert "The dossier's claims" in verdict.inner_text()
    assert page.problems == []
