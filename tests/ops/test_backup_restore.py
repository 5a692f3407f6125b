"""Backup and restore as docs/operations.md gives them: `pg_dump` of a seeded database,
`pg_restore` into a new one beside a copy of the var directory (its SECRET_KEY: agent tokens
are HMACs keyed with it), and everything is there and working, including an agent token
issued before the dump."""

import shutil
import subprocess

import pytest

from tests.ops.databases import (
    KINDS,
    checks,
    inventory,
    manage,
    scratch_database,
    seed_more,
    shell_json,
)

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(not shutil.which("pg_dump"), reason="needs pg_dump and pg_restore"),
]


@pytest.fixture(scope="module")
def restored(tmp_path_factory):
    """A seeded database (demo fleet, default alert rules, a webhook receiver, a promoted load
    test and a gate run, an agent token), dumped, restored into a new one: both inventories."""
    tmp = tmp_path_factory.mktemp("backup")
    with scratch_database("backup_src") as source, scratch_database("backup_dst") as target:
        old = {"database_url": source, "var_dir": tmp / "var-source"}
        manage("migrate", "--no-input", **old)
        manage("seed_demo", "--allow-demo-users", "--history-days", "1", **old)  # a day is enough
        token = shell_json(seed_more(), **old)["token"]
        before = inventory(**old)

        dump = tmp / "perfhub.dump"
        subprocess.run(
            ["pg_dump", "--format=custom", "--no-owner", "--file", str(dump), source], check=True
        )
        subprocess.run(["pg_restore", "--no-owner", "--dbname", target, str(dump)], check=True)

        shutil.copytree(tmp / "var-source", tmp / "var-restored")  # the SECRET_KEY's backup
        after = shell_json(checks(token), database_url=target, var_dir=tmp / "var-restored")
    return {"before": before, **after}


def test_the_seed_had_something_of_everything(restored):
    before = restored["before"]
    assert len(before["services"]) >= 6
    for kind in KINDS:
        assert before[kind], kind
    assert before["rollups"][0] > 0


@pytest.mark.parametrize("kind", [*KINDS, "rollups"])
def test_the_restore_holds_every_row_the_backup_had(restored, kind):
    assert restored["inventory"][kind] == restored["before"][kind]


def test_a_token_issued_before_the_dump_pushes_after_the_restore(restored):
    assert restored["pushed"] == 202


def test_an_unknown_token_is_still_refused_after_the_restore(restored):
    assert restored["refused"] in (401, 403)


def test_every_page_answers_from_the_restored_database(restored):
    failing = {page: code for page, code in restored["pages"].items() if code != 200}
    assert not failing


def test_the_restored_database_needs_no_migration(restored):
    assert restored["pending"] == 0
