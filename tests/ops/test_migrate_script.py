"""deploy/migrate.sh, compose's `migrate` service: it migrates, then says in its log what the
deployment should fix (`check --deploy`), without stopping the stack from starting."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_deploy_with_site_url_left_at_loopback_is_told_so_and_still_starts(tmp_path):
    dropped = {"DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE", "DEBUG", "SITE_URL"}
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PATH=f"{Path(sys.executable).parent}:{env['PATH']}",  # `python`, as in the image
        PERFHUB_VAR_DIR=str(tmp_path),
        SECRET_KEY="x" * 30 + "-a-deployment-secret-for-this-test-only-0123456789",
        ALLOWED_HOSTS="perfhub.example.com",
    )
    done = subprocess.run(
        ["sh", "deploy/migrate.sh"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "perfhub.W001" in done.stderr and "SITE_URL 'http://127.0.0.1:8000'" in done.stderr
    assert (tmp_path / "perfhub.sqlite3").exists()
