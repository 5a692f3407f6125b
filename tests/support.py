"""Test support that is neither a fixture nor a factory: paths, settings values, a browser
login. A library module (tests import it); fixtures stay in conftest.py."""

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"

# The tests' own HTTP servers listen on loopback, which the outbound guard refuses unless
# allow-listed (core.outbound); tests that call them allow-list it, as a deployment would.
LOOPBACK_CIDRS = ["127.0.0.0/8", "::1/128"]


def browser_login(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
