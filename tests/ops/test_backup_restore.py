"""Backup and restore as docs/operations.md gives them: `pg_dump` of a seeded database,
`pg_restore` into a new one beside a copy of the var directory (its SECRET_KEY: agent tokens
are HMACs keyed with it), and everything is there and working, including an agent token
issued before the dump."""

import json
import shutil
import subprocess
import uuid

import pytest

from tests.ops.databases import HOST, INVENTORY, manage, scratch_database, seed_more, shell_json

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not shutil.which("pg_dump"), reason="needs pg_dump and pg_restore"),
]


def _checks(token: str) -> str:
    """Code that reads the inventory, pushes one empty batch with `token` and one with an
    unknown token, counts unapplied migrations, and prints it all."""
    batch = {
        "batch_id": str(uuid.uuid4()),
        "host": HOST,
        "agent_version": "0.1.0",
        "sent_at": "NOW",
        "gpus": [],
        "scrapes": [],
        "requests": [],
    }
    return (
        INVENTORY
        + f"""
import uuid
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

def push(token):
    batch = {json.dumps(batch)}
    batch["batch_id"], batch["sent_at"] = str(uuid.uuid4()), timezone.now().isoformat()
    return Client().post("/api/v1/ingest/", json.dumps(batch), content_type="application/json",
                         HTTP_AUTHORIZATION="Token " + token).status_code

executor = MigrationExecutor(connection)
print(json.dumps({{
    "inventory": inventory,
    "pushed": push("{token}"),
    "refused": push("pha_00000000_not-a-token"),
    "pending": len(executor.migration_plan(executor.loader.graph.leaf_nodes())),
}}, default=str))
"""
    )


@pytest.fixture(scope="module")
def restored(tmp_path_factory):
    """A seeded database (demo fleet, default alert rules, a webhook receiver, a promoted load
    test and a gate run, an agent token), dumped, restored into a new one: both inventories."""
    tmp = tmp_path_factory.mktemp("backup")
    with scratch_database("backup_src") as source, scratch_database("backup_dst") as target:
        old = {"database_url": source, "var_dir": tmp / "var-source"}
        manage("migrate", "--no-input", **old)
        manage("seed_demo", **old)
        token = shell_json(seed_more(), **old)["token"]
        before = shell_json(INVENTORY + "print(json.dumps(inventory, default=str))", **old)

        dump = tmp / "perfhub.dump"
        subprocess.run(
            ["pg_dump", "--format=custom", "--no-owner", "--file", str(dump), source], check=True
        )
        subprocess.run(["pg_restore", "--no-owner", "--dbname", target, str(dump)], check=True)

        shutil.copytree(tmp / "var-source", tmp / "var-restored")  # the SECRET_KEY's backup
        after = shell_json(_checks(token), database_url=target, var_dir=tmp / "var-restored")
    return {"before": before, **after}


def test_the_seed_had_something_of_everything(restored):
    before = restored["before"]
    assert len(before["services"]) >= 6
    for kind in ("baselines", "rules", "receivers", "load_tests", "gate_runs", "tokens"):
        assert before[kind], kind


@pytest.mark.parametrize(
    "kind", ["services", "baselines", "rules", "receivers", "load_tests", "gate_runs", "tokens"]
)
def test_the_restore_holds_every_row_the_backup_had(restored, kind):
    assert restored["inventory"][kind] == restored["before"][kind]


def test_a_token_issued_before_the_dump_pushes_after_the_restore(restored):
    assert restored["pushed"] == 202


def test_an_unknown_token_is_still_refused_after_the_restore(restored):
    assert restored["refused"] in (401, 403)


def test_the_restored_database_needs_no_migration(restored):
    assert restored["pending"] == 0
