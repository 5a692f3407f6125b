"""In headless Chromium: import another service's dossier file, read the preview, confirm."""

import pytest

from dossiers import services
from dossiers.markdown import export_dossier
from tests.factories.catalog import bare_service
from tests.support import browser_login

pytestmark = pytest.mark.browser


@pytest.mark.django_db(transaction=True)
def test_an_owner_previews_an_import_and_confirms_the_rename(
    live_server, browser_page, owner, service, team, tmp_path
):
    services.narrative_revise(service=service, body="# Chat 7B\n\nServes chat.", summary="s")
    source = tmp_path / "chat-7b.md"
    source.write_text(export_dossier(service))
    target = bare_service(team, "blank")
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")

    page.goto(f"{live_server.url}/services/blank/import/")
    page.set_input_files("#id_file", str(source))
    page.click("button:has-text('Preview import')")

    preview = page.locator("#import-preview").inner_text()
    assert "This is the dossier of another service" in preview
    assert "Chat 7B" in preview and "a new revision" in preview
    target.refresh_from_db()
    assert target.name == "Blank"

    page.click("button:has-text('Apply the import')")  # without the box: refused, said why
    assert "dossier of 'chat-7b'" in page.locator(".field .error").inner_text()

    page.check("#id_rename")
    page.click("button:has-text('Apply the import')")
    page.wait_for_selector("#narrative")
    assert "Serves chat." in page.locator("article.narrative").inner_text()
    target.refresh_from_db()
    assert target.name == "Chat 7B"
    assert page.problems == []
