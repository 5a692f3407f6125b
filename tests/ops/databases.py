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


# Read through the ORM of the code that runs it: what a team would miss if a backup or an
# upgrade lost it. (The previous release kept load tests and gate runs in `dossiers`.)
INVENTORY = """
import json
from alerts.models import Receiver, Rule
from collectors.models import AgentToken, ServiceRollup
from dossiers.models import Baseline, Service
try:
    from loadtests.models import GateRun, LoadTest
except ImportError:
    from dossiers.models import GateRun, LoadTest
inventory = {
    "services": sorted(Service.objects.values_list("slug", flat=True)),
    "baselines": sorted(Baseline.objects.values_list("pk", "service__slug", "is_current")),
    "promotions": sorted(
        Baseline.objects.filter(source_load_test__isnull=False).values_list(
            "pk", "source_load_test__pk"
        )
    ),
    "rules": sorted(Rule.objects.values_list("service__slug", "name", "threshold", "enabled")),
    "receivers": sorted(Receiver.objects.values_list("team__slug", "name", "url")),
    "load_tests": sorted(LoadTest.objects.values_list("pk", "service__slug", "measured_at")),
    "gate_runs": sorted(GateRun.objects.values_list("pk", "service__slug", "verdict")),
    "tokens": sorted(AgentToken.objects.values_list("host__name", "prefix", "revoked_at")),
    "rollups": [ServiceRollup.objects.count()],
}
"""
KINDS = ("services", "baselines", "promotions", "rules", "receivers", "load_tests", "gate_runs",
         "tokens")  # fmt: skip


def inventory(**kw) -> dict:
    return shell_json(INVENTORY + "print(json.dumps(inventory, default=str))", **kw)


def checks(token: str) -> str:
    """Code for head: the inventory, a push with `token` and one with an unknown token, the
    migrations left to apply, and the status of the pages a team reads (as the demo user)."""
    return INVENTORY + CHECKS.replace("TOKEN", token).replace("HOST", HOST)


CHECKS = """
import uuid
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

def push(token):
    batch = {"batch_id": str(uuid.uuid4()), "host": "HOST", "agent_version": "0.1.0",
             "sent_at": timezone.now().isoformat(), "gpus": [], "scrapes": [], "requests": []}
    return Client().post("/api/v1/ingest/", json.dumps(batch), content_type="application/json",
                         HTTP_AUTHORIZATION="Token " + token).status_code

reader = Client()
assert reader.login(username="demo", password="perfhub-demo")
pages = ["/", "/alerts/", "/dashboards/"]
for slug in Service.objects.values_list("slug", flat=True):
    pages += [f"/services/{slug}/", f"/services/{slug}/loadtests/",
              f"/services/{slug}/gate-runs/", f"/dashboards/services/{slug}/"]
for run in LoadTest.objects.select_related("service"):
    pages.append(f"/services/{run.service.slug}/loadtests/{run.pk}/")
for gate in GateRun.objects.select_related("service"):
    pages.append(f"/services/{gate.service.slug}/gate-runs/{gate.pk}/")
executor = MigrationExecutor(connection)
print(json.dumps({
    "inventory": inventory,
    "pushed": push("TOKEN"),
    "refused": push("pha_00000000_not-a-token"),
    "pending": len(executor.migration_plan(executor.loader.graph.leaf_nodes())),
    "pages": {page: reader.get(page).status_code for page in pages},
}, default=str))
"""
