"""A team member adds a Prometheus source in the browser, syncs it and reads why it failed."""

import pytest

from deploy.stack import free_port
from tests.support import browser_login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_source_is_added_synced_and_its_error_shown(
    browser_page, live_server, owner, service, outbound_loopback
):
    page = browser_page
    browser_login(page, live_server.url, "alice", "pw-alice-123")
    page.goto(live_server.url + "/collectors/prometheus/")
    page.click("text=New source")
    page.fill("#id_name", "chat-prom")
    page.select_option("#id_service", label=service.name)
    page.fill("#id_base_url", f"http://127.0.0.1:{free_port()}")
    page.fill("#id_engine_selector", 'job="vllm"')
    page.click("form.form button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert "not queried yet" in page.inner_text("main")
    page.click("text=Sync now")
    page.wait_for_load_state("networkidle")
    assert "Sync failed: unreachable: could not connect" in page.inner_text("body")
    error = page.get_by_label("Last error")
    assert error.inner_text() == "unreachable: could not connect"

    assert page.problems == []
