"""One number, one definition: a service's figures read the same on every page that shows them.

One service with a baseline and two hours of live roll-ups (even traffic, so every window of it
has the same figures); its alert rules evaluated once. Headless Chromium then reads the baseline
P99 end-to-end and cost per Mtok, and the live P99, cost and margin, from the fleet, the dossier
and its claims check, onboarding, the service and fleet dashboards, the live page and the alert
pages. Where two pages use the same definition they must show the same text; where a page uses
another window it must say which.
"""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from alerts.services import ensure_default_rules, evaluate_all
from tests.factories.catalog import make_baseline, make_service
from tests.factories.traffic import floor_minute, seed_traffic
from tests.support import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?%?")


def figure(text: str) -> str:
    """The first number in a cell's text ("live 1,490 ms (+1%)" -> "1,490")."""
    match = NUMBER.search(text)
    assert match, f"no figure in {text!r}"
    return match.group(0)


def as_float(text: str) -> float:
    return float(figure(text).replace(",", "").rstrip("%"))


@pytest.fixture
def svc(team):
    # 1 GPU per replica, 2 replicas at 10/GPU-hour, sold at 5 per Mtok of output.
    svc = make_service(team, "agree-svc", name="Agree Service")
    now = timezone.now()
    # 1 request/s per replica, as the baseline; 1,000 output tokens/s for the service: a live
    # cost of 20 / 3.6 = 5.56 per Mtok and a margin of -11.1%, against the baseline's 1.39.
    # The baseline's tokens per request are the live traffic's, so its latency claims are judged.
    make_baseline(svc, measured_at=now - timedelta(days=10), qps=1.0, e2e_p99_ms=1480.0,
                  prompt_tokens_mean=250.0, output_tokens_mean=500.0)  # fmt: skip
    end = floor_minute(now)
    seed_traffic(service=svc, start=end - timedelta(minutes=120), minutes=120,
                 e2e_ms=1000.0, tokens_per_second=1000.0)  # fmt: skip
    ensure_default_rules(svc)
    evaluate_all(now)
    return svc


@pytest.fixture
def page(browser_page, live_server, owner):
    browser_login(browser_page, live_server.url, "alice", "pw-alice-123")
    browser_page.base = live_server.url
    return browser_page


def text(page, selector: str) -> str:
    """The element's text as written (not as CSS transforms it), spaces collapsed."""
    return " ".join(page.locator(selector).first.text_content().split())


def claims_fragment(page) -> dict[str, str]:
    """The claims check as embedded (dossier, onboarding, dashboard), once the fragment loads."""
    page.wait_for_selector("tr[data-claim=e2e_p99_ms]", timeout=20000)
    return {
        "window": text(page, ".claims thead th:nth-child(3)"),
        "base_p99": figure(text(page, "tr[data-claim=e2e_p99_ms] [data-source=baseline]")),
        "live_p99": figure(text(page, "tr[data-claim=e2e_p99_ms] [data-source=live]")),
        "base_cost": figure(text(page, "tr[data-claim=cost_per_mtok] [data-source=baseline]")),
        "live_cost": figure(text(page, "[data-live-economics] [data-live=cost]")),
        "live_margin": figure(text(page, "[data-live-economics] [data-live=margin]")),
    }


def test_every_page_shows_the_same_figures_or_says_which_window(page, svc):
    base = page.base
    page.goto(f"{base}/")
    row = f"tr[data-service={svc.slug}]"
    fleet = {
        "base_p99": figure(text(page, f"{row} [data-figure=p99] span")),
        "live_p99": figure(text(page, f"{row} [data-live=p99]")),
        "base_cost": figure(text(page, f"{row} [data-figure=cost]")),
        "live_cost": figure(text(page, f"{row} [data-live=cost]")),
        "live_margin": figure(text(page, f"{row} [data-live=margin]")),
    }
    assert "last 60 min" in text(page, f"{row} [data-claims]")
    assert fleet == {"base_p99": "1,480", "live_p99": fleet["live_p99"], "base_cost": "1.39",
                     "live_cost": "5.56", "live_margin": "-11.1%"}  # fmt: skip
    assert as_float(fleet["live_p99"]) == pytest.approx(1490, rel=0.02)

    for path in (f"/services/{svc.slug}/", f"/services/{svc.slug}/onboarding/",
                 f"/dashboards/services/{svc.slug}/"):  # fmt: skip
        page.goto(base + path)
        seen = claims_fragment(page)
        assert "last 60 min" in seen.pop("window"), path
        assert seen == fleet, path
        if "/dashboards/" in path:  # the cost chart's baseline line, in its legend
            legend = page.locator(".legendtext", has_text="baseline cost").first
            legend.wait_for(timeout=30000)
            assert "baseline cost (1.39 " in legend.text_content()
        else:  # the dossier's own baseline tables
            assert figure(text(page, "[data-slo=e2e] [data-source=baseline]")) == "1,480", path
            assert figure(text(page, ".economics [data-figure=cost]")) == "1.39", path
            assert "baseline" in text(page, ".economics caption"), path

    # The fleet dashboard: live over its own range, which its headers name.
    page.goto(f"{base}/dashboards/?range=1h")
    row = f"table.fleet-dash tr[data-service={svc.slug}]"
    assert "live, last 1 h" in text(page, "table.fleet-dash thead")
    assert figure(text(page, f"{row} [data-figure=p99]")) == fleet["live_p99"]
    assert figure(text(page, f"{row} [data-figure=cost]")) == "5.56"
    assert figure(text(page, f"{row} [data-figure=margin]")) == "-11.1%"
    wide = page.evaluate(
        "Array.from(document.querySelectorAll('.table-wrap'))"
        ".filter(e => e.scrollWidth > e.clientWidth + 1).length"
    )
    assert wide == 0  # the window in the headers does not push columns out of view

    # The service's live page: the same live window and definition as the claims.
    page.goto(f"{base}/collectors/services/{svc.slug}/")
    assert "live, last 60 min" in text(page, "[aria-label='Live economics'] h2")
    assert figure(text(page, "[aria-label='Live economics'] [data-figure=cost]")) == "5.56"
    assert figure(text(page, "[aria-label='Live economics'] [data-figure=margin]")) == "-11.1%"

    # The alert pages: each value in the rule's unit, with the window its rule reads.
    page.goto(f"{base}/alerts/")
    margin = text(page, "[data-alert-value=margin]")
    assert figure(margin) == "-11.1%" and "live, last 60 min" in margin
    p99 = text(page, "[data-alert-value=p99_e2e]")
    assert "ms" in p99 and "live, last 5 min" in p99  # a shorter window, and it says so
    assert as_float(p99) == pytest.approx(as_float(fleet["live_p99"]), rel=0.02)
    page.click("tr:has([data-alert-value=margin]) a.strong")
    detail = text(page, "[data-alert-value=margin]")
    assert figure(detail) == "-11.1%" and "live, last 60 min" in detail
    assert page.problems == []
