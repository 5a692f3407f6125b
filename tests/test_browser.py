"""End to end in headless Chromium: login -> fleet -> a dossier -> edit the narrative.

Uses Debian's chromium (PERFHUB_CHROMIUM or /usr/bin/chromium) through Playwright's sync API;
fails on any console error or page error. Skipped with a reason when chromium is missing.
"""

import os
from pathlib import Path

# Playwright's sync API runs an event loop in this thread; Django refuses ORM calls from a thread
# with a running loop unless told it is safe (tests only: the ORM is used synchronously here).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

import pytest

from dossiers import services

CHROMIUM = os.environ.get("PERFHUB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no chromium at {CHROMIUM}"),
]


@pytest.fixture
def browser_page():
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        problems: list[str] = []
        page.on(
            "console",
            lambda msg: (
                problems.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None
            ),
        )
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        page.problems = problems
        try:
            yield page
        finally:
            browser.close()


@pytest.mark.django_db(transaction=True)
def test_an_owner_logs_in_opens_a_dossier_and_edits_its_narrative(
    live_server, browser_page, owner, service, tmp_path
):
    services.narrative_revise(service=service, body="# Chat 7B\n\nFirst words.", summary="start")
    page = browser_page

    page.goto(f"{live_server.url}/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")

    page.wait_for_selector("table.fleet")
    assert page.locator("h1").inner_text() == "Fleet"
    page.click("text=Chat 7B")

    page.wait_for_selector("#narrative")
    assert "First words." in page.locator("article.narrative").inner_text()
    page.click("text=Edit narrative")

    page.fill("#id_body", "# Chat 7B\n\nNow with **parallel tokenizers**.")
    page.fill("#id_summary", "tokenizer fix")
    page.click("button:has-text('Save revision')")

    page.wait_for_selector("article.narrative strong")
    assert page.locator("article.narrative strong").inner_text() == "parallel tokenizers"
    assert "tokenizer fix" in page.locator("#revisions").inner_text()

    shot = tmp_path / "dossier.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000

    assert page.problems == []


@pytest.mark.django_db(transaction=True)
def test_a_rejected_form_shows_its_message_in_the_browser(
    live_server, browser_page, owner, service
):
    page = browser_page
    page.goto(f"{live_server.url}/accounts/login/?next=/services/{service.slug}/configs/new/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "pw-alice-123")
    page.click("button[type=submit]")
    page.fill("#id_config", "[1, 2]")
    page.click("button:has-text('Save version')")
    assert "Config must be a JSON object" in page.locator(".field .error").inner_text()
    assert page.problems == []
