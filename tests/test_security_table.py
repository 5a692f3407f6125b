"""docs/security.md's table of credentials x actions, tried cell by cell.

The table in the doc is the one data structure: this module parses it, and each cell becomes a
test that makes the request with that credential and reduces the answer to the table's
vocabulary (yes, 401, 403, login, hidden, masked). A refusal must be the refusal the table
names; a change of policy is a change of the doc.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from django.test import Client
from django.utils import timezone

from alerts.models import AlertInstance, Notification, Receiver, Rule
from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Team
from loadtests.importing import import_loadtest_file
from loadtests.tokens import ci_token_issue, ci_token_revoke
from tests.factories.batches import make_batch

DOC = Path(__file__).resolve().parent.parent / "docs" / "security.md"
MARKER = "<!-- security-table:"
SECRET_URL = "https://hooks.example.com/services/T000/B000/XXXXSECRETXXXX"
SECRET_ERROR = f"{SECRET_URL} answered 500: internal error"


def read_table(path: Path = DOC) -> tuple[list[str], dict[str, dict[str, str]]]:
    """(credential columns, {action: {credential: cell}}) from the table after MARKER."""
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(MARKER)) + 1
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    header, _rule, *body = rows
    columns = [re.fullmatch(r"`([\w-]+)`", cell).group(1) for cell in header[1:]]
    table = {}
    for row in body:
        action = re.match(r"`([\w-]+)`", row[0]).group(1)
        table[action] = dict(zip(columns, row[1:], strict=True))
    return columns, table


COLUMNS, TABLE = read_table()
CELLS = [(action, who, cell) for action, row in TABLE.items() for who, cell in row.items()]


# --- the world every cell is tried in ---------------------------------------------------------


@pytest.fixture
def world(db, team, owner, outsider, service, django_user_model, fixtures_dir, make_service):
    c16 = (fixtures_dir / "loadtests" / "vllm-bench-serve-c16.json").read_bytes()
    (run,) = import_loadtest_file(service=service, content=c16, baseline=True)  # gate reference
    other = make_service("ranker", team=Team.objects.create(slug="search", name="Search"))
    staff = django_user_model.objects.create_user("sam", password="pw-sam-123", is_staff=True)
    _, agent = token_issue_for_host_name(host_name="gpu-node-07")
    revoked, revoked_plain = ci_token_issue(service=service)
    ci_token_revoke(token=revoked)
    rule = Rule.objects.create(service=service, name="P99", kind="p99_e2e", threshold=2000)
    now = timezone.now()
    alert = AlertInstance.objects.create(
        rule=rule, service=service, fingerprint="0123456789abcdef", state="firing",
        threshold=2000, value=2600, fired_at=now - timedelta(minutes=2), last_evaluated_at=now,
    )  # fmt: skip
    receiver = Receiver.objects.create(team=team, name="oncall", kind="webhook", url=SECRET_URL)
    Notification.objects.create(
        receiver=receiver, service=service, rule=rule, group_key="g", evaluated_at=now,
        status="failed", alert_status="firing", payload={}, attempts=3, last_error=SECRET_ERROR,
    )  # fmt: skip
    return {
        "c16": c16,
        "run": run,
        "alert": alert,
        "users": {"outsider": outsider, "member": owner, "staff": staff},
        "tokens": {
            "agent": agent,
            "ci": ci_token_issue(service=service)[1],
            "ci-promote": ci_token_issue(service=service, can_promote=True)[1],
            "ci-team": ci_token_issue(team=team)[1],
            "ci-other": ci_token_issue(service=other)[1],
            "ci-revoked": revoked_plain,
        },
    }


def client_for(who: str, world: dict) -> Client:
    client = Client()
    if who in world["users"]:
        client.force_login(world["users"][who])
    elif who in world["tokens"]:
        client.defaults["HTTP_AUTHORIZATION"] = f"Token {world['tokens'][who]}"
    else:
        assert who == "anonymous", who
    return client


# --- each action, reduced to the table's vocabulary ---------------------------------------------


def outcome(response) -> str:
    if response.status_code == 302 and "login/" in response["Location"]:
        return "login"
    if response.status_code in (401, 403, 404, 429):
        return str(response.status_code)
    assert response.status_code < 300, (response.status_code, response.content[:300])
    return "yes"


def _page(path: str) -> Callable:
    return lambda client, world: outcome(client.get(path))


def _post_file(path: str) -> Callable:
    def act(client, world):
        return outcome(client.post(path, world["c16"], content_type="application/json"))

    return act


def _plan(client, world) -> str:
    response = client.get("/api/v1/services/chat-7b/plan/", {"load": "1"})
    # 422: authorized and answered; this world's service has one run, so no sweep to plan from.
    return "yes" if response.status_code == 422 else outcome(response)


def _experiment(client, world) -> str:
    run = world["run"]
    response = client.post(
        "/api/v1/services/chat-7b/experiments/",
        {"before": run.pk, "after": run.pk},
        content_type="application/json",
    )
    # 400: authorized and answered; this world's service has one run, so no pair to record.
    return "yes" if response.status_code == 400 else outcome(response)


def _ingest(client, world) -> str:
    return outcome(client.post("/api/v1/ingest/", make_batch(), content_type="application/json"))


def _receivers(client, world) -> str:
    response = client.get("/alerts/receivers/")
    result = outcome(response)
    if result != "yes":
        return result
    return "yes" if SECRET_URL in response.content.decode() else "hidden"


def _delivery_error(client, world) -> str:
    response = client.get(f"/alerts/{world['alert'].pk}/")
    result = outcome(response)
    if result != "yes":
        return result
    html = response.content.decode()
    if SECRET_ERROR in html and SECRET_URL in html:
        return "yes"
    assert SECRET_URL not in html and "answered 500" not in html, "a secret leaked"
    assert "https://hooks.example.com/…" in html
    return "masked"


ACTIONS: dict[str, Callable[[Client, dict], str]] = {
    "dossier-read": _page("/services/chat-7b/"),
    "dossier-edit": _page("/services/chat-7b/narrative/edit/"),
    "ingest": _ingest,
    "metrics-read": _page("/api/v1/services/chat-7b/metrics/"),
    "plan-read": _plan,
    "loadtest-import": _post_file("/api/v1/services/chat-7b/loadtests/"),
    "baseline-promote": _post_file("/api/v1/services/chat-7b/loadtests/?baseline=1"),
    "gate": _post_file("/api/v1/services/chat-7b/gate/"),
    "experiment-record": _experiment,
    "experiment-read": _page("/api/v1/services/chat-7b/experiments/"),
    "receivers": _receivers,
    "delivery-error": _delivery_error,
    "ci-tokens": _page("/services/chat-7b/ci-tokens/"),
    "api-docs": _page("/api/docs/"),
    "admin": _page("/admin/"),
}


def test_the_doc_and_the_test_name_the_same_actions():
    assert set(TABLE) == set(ACTIONS)
    assert all(cell in {"yes", "401", "403", "login", "hidden", "masked"} for *_, cell in CELLS)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("action", "who", "expected"), CELLS, ids=[f"{a}-{w}" for a, w, _ in CELLS]
)
def test_the_cell_holds(world, action, who, expected):
    assert ACTIONS[action](client_for(who, world), world) == expected
