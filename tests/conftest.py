"""Shared fixtures: personas (owner, outsider) and their logged-in clients, a team and a service.
Builders tests import are library modules: `tests.factories`, `tests.support`.

Tests run against whatever database DATABASE_URL names (PostgreSQL in CI), else SQLite.
Celery tasks run eagerly in tests unless a test starts a real worker on Redis.
"""

import os
from pathlib import Path

import pytest
from django.core.cache import cache
from django.db import connection, connections

from dossiers.models import Membership, Service, Team
from tests.factories.catalog import chat_7b, dossier_service
from tests.support import FIXTURES, LOOPBACK_CIDRS, module_rows

# Browser tests: Debian's chromium driven by Playwright (no `playwright install` here).
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


def pytest_collection_modifyitems(config, items):
    """Skip `postgres`-marked tests on SQLite (e.g. COPY), with the reason shown."""
    if connection.vendor == "postgresql":
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True, scope="session")
def _fast_password_hashing():
    """MD5 for the test users' passwords: production's PBKDF2 costs most of a second per user
    on a busy 2-core machine, and nearly every test makes one (Django's testing advice)."""
    from django.test.utils import override_settings

    with override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]):
        yield


@pytest.fixture(autouse=True)
def _eager_celery(settings):
    from perfhub.celery import app

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield
    app.conf.task_always_eager = previous


@pytest.fixture(autouse=True)
def _fresh_rate_limits(settings):
    """Rate-limit counters and the heartbeat live in the cache. Each test gets a cache of its
    own process (not the shared Redis, which the other test process and the broker use) and
    starts with it empty, so one test's logins or pushes never throttle another's."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
            "LOCATION": f"tests-{worker}",
            "KEY_PREFIX": "perfhub",
        }
    }
    cache.clear()


@pytest.fixture
def browser_page(monkeypatch):
    """A headless Chromium page; `page.problems` collects console errors and page errors.

    Pages keep their Content-Security-Policy (no 'unsafe-eval'): give `wait_for_function` a
    function ("() => ..."), not an expression, which Playwright would eval inside the page."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM}")
    sync_api = pytest.importorskip("playwright.sync_api")
    # Playwright's sync API runs an event loop in this thread; the ORM calls the tests make
    # around it are synchronous, so Django's async guard may stand down for the test.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        problems: list[str] = []
        page.on(
            "console",
            lambda msg: problems.append(f"console: {msg.text}") if msg.type == "error" else None,
        )
        page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
        # A request cut short by the next navigation (net::ERR_ABORTED) is not a failure.
        page.on(
            "requestfailed",
            lambda req: (
                None
                if "ERR_ABORTED" in (req.failure or "")
                else problems.append(f"request failed: {req.url} ({req.failure})")
            ),
        )
        page.problems = problems
        try:
            yield page
        finally:
            # ORM calls made while Playwright runs use a connection of their own (its greenlet
            # has its own context); close it, or it blocks dropping the test database.
            connections.close_all()
            browser.close()


@pytest.fixture
def outbound_loopback(settings) -> None:
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = LOOPBACK_CIDRS


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


@pytest.fixture
def vllm_text(fixtures_dir: Path) -> str:
    """vLLM's real /metrics page (the agent's and the demo's tests read it)."""
    return (fixtures_dir / "vllm" / "metrics-t0.prom").read_text()


@pytest.fixture
def team(db) -> Team:
    return Team.objects.create(slug="inference", name="Inference Platform")


@pytest.fixture
def owner(db, team, django_user_model):
    user = django_user_model.objects.create_user("alice", password="pw-alice-123")
    Membership.objects.create(team=team, user=user, role=Membership.Role.OWNER)
    return user


@pytest.fixture
def outsider(db, django_user_model):
    return django_user_model.objects.create_user("mallory", password="pw-mallory-123")


@pytest.fixture
def service(db, team) -> Service:
    return chat_7b(team, engine_version="0.6.3", replicas=4)


@pytest.fixture(scope="module")
def demo_fleet(django_db_setup, django_db_blocker):
    """The demo fleet (`seed_demo`'s files), imported once per test module, for reading.

    It lives in a transaction opened around the module and rolled back after it, as Django's
    `setUpTestData` does; each test's own changes roll back to it (tests use `db` as usual).
    """
    from dossiers.demo import build_demo
    from loadtests.demo import add_demo_loadtests

    def build():
        result = build_demo()
        add_demo_loadtests(result.services.values())
        return result

    yield from module_rows(django_db_blocker, build)


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def outsider_client(client, outsider):
    client.force_login(outsider)
    return client


@pytest.fixture
def make_service(team):
    """Build a service with a current baseline (`tests.factories.catalog.dossier_service`),
    as many as a test needs: `make_service("chat-8b", slo_p99_e2e_ms=3000)`."""

    def make(slug: str, **overrides) -> Service:
        overrides.setdefault("team", team)
        return dossier_service(slug, **overrides)

    return make


@pytest.fixture
def latest_schema_restored():
    """For migration tests: the newest schema again after the test moved it (`support.migrate`)."""
    yield
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # whatever the test left behind
