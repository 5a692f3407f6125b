"""Every page under a strict Content-Security-Policy, in headless Chromium.

Builds the demo fleet (plus an alert with a chart, a CI token and an agent host), logs in as
the demo superuser and walks the site from the fleet page: every same-site link, one URL per
route (so a route's hundred runs are one visit), the admin and the API docs included. Fails on
any `securitypolicyviolation` event, any console or page error, and on a page whose policy
allows inline script.
"""

from __future__ import annotations

from collections import deque
from datetime import timedelta
from urllib.parse import urljoin, urlsplit

import pytest
from django.urls import Resolver404, resolve
from django.utils import timezone
from playwright.sync_api import Error as PlaywrightError

from alerts.models import AlertInstance, Rule
from collectors.services.tokens import token_issue_for_host_name
from dossiers import demo
from loadtests.demo import add_demo_loadtests
from loadtests.tokens import ci_token_issue
from tests.support import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Collected in the page itself, from before any of its scripts runs.
WATCH_CSP = """
window.__csp = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.__csp.push(e.violatedDirective + " blocked " + (e.blockedURI || "inline") +
                    " at " + e.sourceFile + ":" + e.lineNumber);
});
"""
# Pages that change state on GET, or leave the site, are not walked.
SKIP_ROUTES = {"accounts/logout/"}
MAX_PAGES = 150
# Elements whose content a page's script fetches after the load event (static/js): only such
# pages wait for the network to go quiet (half a second each), the others are read at load.
FETCHES = "[data-panels-url], [data-fragment]"
EXTRA = ["/api/docs/", "/admin/", "/admin/alerts/receiver/", "/admin/loadtests/citoken/"]


def _route(path: str) -> str | None:
    try:
        match = resolve(path)
    except Resolver404:
        return None
    return match.route


@pytest.fixture
def site(db):
    built = demo.build_demo()
    add_demo_loadtests(list(built.services.values()))
    service = next(iter(built.services.values()))
    ci_token_issue(service=service, label="release pipeline")
    token_issue_for_host_name(host_name="gpu-node-07")
    rule = Rule.objects.create(service=service, name="P99 e2e above SLO", kind="p99_e2e",
                               threshold=2000)  # fmt: skip
    now = timezone.now()
    AlertInstance.objects.create(
        rule=rule, service=service, fingerprint="0123456789abcdef", state="firing",
        threshold=2000, value=2600, pending_since=now - timedelta(minutes=5),
        fired_at=now - timedelta(minutes=2), last_evaluated_at=now,
        series=[[int((now - timedelta(minutes=m)).timestamp()), 2000 + 150 * (5 - m)]
                for m in range(5, -1, -1)],
    )  # fmt: skip
    return built


def test_every_page_keeps_a_strict_csp_with_no_violation(browser_page, live_server, site):
    page = browser_page
    page.add_init_script(WATCH_CSP)
    browser_login(page, live_server.url, demo.ADMIN_USERNAME, demo.ADMIN_PASSWORD)

    violations: list[str] = []
    visited: list[str] = []
    seen_routes: set[str] = set()
    queue = deque(["/", *EXTRA])
    while queue and len(visited) < MAX_PAGES:
        path = queue.popleft()
        route = _route(urlsplit(path).path)
        if route is None or route in SKIP_ROUTES or route in seen_routes:
            continue
        seen_routes.add(route)
        if route.startswith("api/") and route != "api/docs/":
            continue  # JSON, not a page
        try:
            response = page.goto(live_server.url + path)
        except PlaywrightError as exc:
            if "Download is starting" in str(exc):
                continue  # a file to save (a dossier's Markdown), not a page
            raise
        if page.locator(FETCHES).count():
            page.wait_for_load_state("networkidle")  # its panels and fragments, fetched after load
        visited.append(path)
        assert response is not None and response.status < 400, f"{path}: {response.status}"
        policy = response.headers.get("content-security-policy", "")
        script_src = next((d for d in policy.split(";") if d.strip().startswith("script-src")), "")
        assert "'self'" in script_src and "'unsafe-inline'" not in script_src, (path, policy)
        assert "https:" not in policy and "http:" not in policy, (path, policy)
        violations += [f"{path}: {v}" for v in page.evaluate("window.__csp")]
        for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
            parts = urlsplit(urljoin(page.url, href))
            if parts.netloc == urlsplit(live_server.url).netloc:
                queue.append(parts.path + (f"?{parts.query}" if parts.query else ""))

    assert len(visited) > 25, visited  # the walk really went through the site
    assert any(p.startswith("/alerts/") and p[8:9].isdigit() for p in visited), visited
    assert violations == []
    assert page.problems == []
