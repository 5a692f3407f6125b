"""An upgrade from the previous release, with data in it: the database is built by that
release's own code (`git archive` of its commit, run with this environment: its `migrate`,
`seed_demo`, a promoted load test, a gate run, alert rules, a receiver, a token), then head
migrates it. Everything is read back through head's ORM and the pages answer.

Why build it from the commit rather than keep a dump in the repo: the old code is the exact
truth of what a deployment has, nothing binary is committed, and bumping PREVIOUS_RELEASE at
each release is the whole upkeep. It needs the clone's history (skipped, with the reason,
without it). This is the test that proves the move of load tests and gate runs into the
`loadtests` app keeps them.
"""

import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.ops.databases import (
    KINDS,
    ROOT,
    checks,
    inventory,
    manage,
    scratch_database,
    seed_more,
    shell_json,
)

PREVIOUS_RELEASE = "7c1af91"  # the last commit before the loadtests app
pytestmark = pytest.mark.postgres


def _previous_release(dest: Path) -> Path:
    if not shutil.which("git"):
        pytest.skip("needs git to check out the previous release")
    known = subprocess.run(
        ["git", "cat-file", "-e", f"{PREVIOUS_RELEASE}^{{commit}}"], cwd=ROOT, capture_output=True
    )
    if known.returncode != 0:
        pytest.skip(f"commit {PREVIOUS_RELEASE} is not in this clone (a shallow clone?)")
    archive = subprocess.run(
        ["git", "archive", "--format=tar", PREVIOUS_RELEASE], cwd=ROOT, capture_output=True
    )
    assert archive.returncode == 0, archive.stderr
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest


@pytest.fixture(scope="module")
def upgraded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("upgrade")
    previous = _previous_release(tmp / "previous")
    with scratch_database("upgrade") as url:
        site = {"database_url": url, "var_dir": tmp / "var"}
        manage("migrate", "--no-input", cwd=previous, **site)
        manage("seed_demo", cwd=previous, **site)
        token = shell_json(seed_more(), cwd=previous, **site)["token"]
        before = inventory(cwd=previous, **site)

        manage("migrate", "--no-input", **site)  # head
        after = shell_json(checks(token), **site)
    return {"before": before, **after}


def test_the_previous_release_left_something_of_everything(upgraded):
    for kind in KINDS:
        assert upgraded["before"][kind], kind


@pytest.mark.parametrize("kind", [*KINDS, "rollups"])
def test_the_upgrade_keeps_every_row(upgraded, kind):
    assert upgraded["inventory"][kind] == upgraded["before"][kind]


def test_every_page_answers_after_the_upgrade(upgraded):
    failing = {page: code for page, code in upgraded["pages"].items() if code != 200}
    assert not failing
    assert any("/gate-runs/" in page for page in upgraded["pages"])


def test_a_token_issued_before_the_upgrade_still_pushes(upgraded):
    assert upgraded["pushed"] == 202


def test_nothing_is_left_to_migrate(upgraded):
    assert upgraded["pending"] == 0
