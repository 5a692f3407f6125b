"""End to end in headless Chromium: login -> fleet -> a dossier -> edit the narrative.

Uses Debian's chromium (PERFHUB_CHROMIUM or /usr/bin/chromium) through Playwright's sync API;
fails on any console error or page error. Skipped with a reason when chromium is missing.
"""

import pytest

from dossiers import services

pytestmark = pytest.mark.browser


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
