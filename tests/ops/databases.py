"""Throw-away PostgreSQL databases beside the test database, and `manage.py` run against one.

Backups and upgrades happen to whole databases, outside any test transaction, so these tests
make their own (named after DATABASE_URL's, with a random suffix) and drop them afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

ROOT = Path(__file__).resolve().parents[2]


def _server() -> tuple[str, str]:
    parts = urlsplit(os.environ["DATABASE_URL"])
    base = parts.path.lstrip("/") or "perfhub"
    return urlunsplit(parts._replace(path="/postgres")), base


def database_url(name: str) -> str:
    return urlunsplit(urlsplit(os.environ["DATABASE_URL"])._replace(path=f"/{name}"))


@contextmanager
def scratch_database(purpose: str) -> Iterator[str]:
    """A new, empty database; yields its URL, drops it on the way out."""
    admin, base = _server()
    name = f"{base}_{purpose}_{secrets.token_hex(3)}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def manage(
    *args: str, database_url: str, var_dir: Path, cwd: Path = ROOT, stdin: str | None = None
) -> str:
    """`manage.py ARGS` of the code in `cwd` on that database (Celery eager: no broker);
    `var_dir` holds its generated SECRET_KEY. Returns stdout; a failure fails the test."""
    dropped = {"DATABASE_URL", "REDIS_URL", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(DATABASE_URL=database_url, PERFHUB_VAR_DIR=str(var_dir), DEBUG="0")
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"manage.py {' '.join(args)}:\n{result.stderr[-3000:]}"
    return result.stdout


def shell_json(code: str, **kw) -> dict:
    """Run `code` in `manage.py shell`; it prints one JSON object last, returned here."""
    out = manage("shell", "-c", code, **kw)
    return json.loads(out.strip().splitlines()[-1])


# Beyond `seed_demo`: a promoted load test and a gate run (`import_loadtest`, `perf_gate`),
# every service's default alert rules (`evaluate_alerts`), a webhook receiver and an agent token
# for HOST. Only commands and models both the previous release and head have; prints the token.
SEED_MORE = """
import json
from django.core.management import call_command
from alerts.models import Receiver
from collectors.services.tokens import token_issue_for_host_name
from dossiers.models import Team
call_command("import_loadtest", "{loadtest}", "--service", "{service}", "--baseline")
call_command("perf_gate", "--service", "{service}", "{loadtest}")
call_command("evaluate_alerts")
Receiver.objects.create(team=Team.objects.order_by("pk").first(), name="on-call",
                        kind="webhook", url="https://hooks.example.com/perfhub")
_, token = token_issue_for_host_name(host_name="{host}", label="before the backup")
print(json.dumps({{"token": token}}))
"""
HOST = "gpu-node-07"
SERVICE = "support-chat-7b"
LOADTEST = ROOT / "tests" / "fixtures" / "loadtests" / "vllm-bench-serve-c16.json"


def seed_more() -> str:
    return SEED_MORE.format(loadtest=LOADTEST, service=SERVICE, host=HOST)


# Read through head's ORM: what a team would miss if a backup or an upgrade lost it.
INVENTORY = """
import json
from alerts.models import Receiver, Rule
from collectors.models import AgentToken
from dossiers.models import Baseline, Service
from loadtests.models import GateRun, LoadTest
inventory = {
    "services": sorted(Service.objects.values_list("slug", flat=True)),
    "baselines": sorted(Baseline.objects.values_list("pk", "service__slug", "is_current")),
    "rules": sorted(Rule.objects.values_list("service__slug", "name", "threshold", "enabled")),
    "receivers": sorted(Receiver.objects.values_list("team__slug", "name", "url")),
    "load_tests": sorted(LoadTest.objects.values_list("pk", "service__slug")),
    "gate_runs": sorted(GateRun.objects.values_list("pk", "verdict")),
    "tokens": sorted(AgentToken.objects.values_list("host__name", "revoked_at")),
}
"""
