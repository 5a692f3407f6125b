"""Every live figure says its window next to it, read from the window the code computes over.

The home page's live figures are over the claims window (`PERFHUB_CLAIMS_WINDOW_MINUTES`), the
fleet dashboard's over its range: both called "live", they differ (1.83 vs 1.79 per Mtok for one
demo service) unless each says which window it is.
"""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import floor_minute, seed_traffic

pytestmark = pytest.mark.django_db


@pytest.fixture
def live_service(team):
    svc = make_service(team, "window-svc")
    now = timezone.now()
    make_baseline(svc, measured_at=now - timedelta(days=3), qps=1.0)
    end = floor_minute(now)
    seed_traffic(service=svc, start=end - timedelta(minutes=90), minutes=90)
    return svc


def _cell(content: str, attr: str) -> str:
    """The text of the first element carrying `attr` (tags removed, spaces collapsed)."""
    match = re.search(rf"<[^>]*{attr}[^>]*>(.*?)</(?:div|td)>", content, re.S)
    assert match, f"no {attr} on the page"
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split())


@pytest.mark.parametrize("minutes", [60, 30])
def test_home_live_figures_name_the_claims_window(
    client, outsider, live_service, settings, minutes
):
    settings.PERFHUB_CLAIMS_WINDOW_MINUTES = minutes
    client.force_login(outsider)
    content = client.get(reverse("home")).content.decode()
    for figure in ("p99", "cost", "margin"):
        assert f"live, last {minutes} min" in _cell(content, f'data-live="{figure}"'), figure


@pytest.mark.parametrize(("range_key", "words"), [("1h", "last 1 h"), ("24h", "last 24 h")])
def test_fleet_dashboard_cost_and_margin_name_its_range(
    client, outsider, live_service, range_key, words
):
    client.force_login(outsider)
    content = client.get(reverse("dashboards:fleet") + f"?range={range_key}").content.decode()
    for figure in ("cost", "margin"):
        cell = _cell(content, f'data-figure="{figure}" data-source="live"')
        assert f"live, {words}" in cell, figure
