"""The one settings file: embedded default, production switches, deploy checks."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PRODUCTION_ENV = {
    "SECRET_KEY": "x" * 30 + "-production-secret-for-the-deploy-check-only-0123456789",
    "DEBUG": "0",
    "ALLOWED_HOSTS": "perfhub.example.com",
    "SITE_URL": "https://perfhub.example.com",
    "SECURE_SSL_REDIRECT": "1",
    "SECURE_COOKIES": "1",
    "SECURE_HSTS_SECONDS": "31536000",
}


def _manage(*args: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess:
    # The browser tests set DJANGO_ALLOW_ASYNC_UNSAFE for Playwright; a deployment never would.
    dropped = {"DATABASE_URL", "REDIS_URL", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    base["PERFHUB_VAR_DIR"] = str(tmp_path)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_production_settings(tmp_path):
    result = _manage(
        "check", "--deploy", "--fail-level", "WARNING", env=PRODUCTION_ENV, tmp_path=tmp_path
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_embedded_default_keeps_its_database_under_var(tmp_path):
    code = "from django.conf import settings; print(settings.DATABASES['default']['NAME'])"
    result = _manage("shell", "-c", code, env={}, tmp_path=tmp_path)
    assert result.stdout.strip().splitlines()[-1] == str(tmp_path / "perfhub.sqlite3")


def test_without_redis_celery_runs_tasks_eagerly(tmp_path):
    code = "from perfhub.celery import app; print(app.conf.task_always_eager)"
    result = _manage("shell", "-c", code, env={}, tmp_path=tmp_path)
    assert result.stdout.strip().splitlines()[-1] == "True"


def test_redis_url_selects_the_broker(tmp_path):
    code = "from perfhub.celery import app; print(app.conf.broker_url, app.conf.task_always_eager)"
    result = _manage(
        "shell", "-c", code, env={"REDIS_URL": "redis://127.0.0.1:6379/3"}, tmp_path=tmp_path
    )
    assert result.stdout.strip().splitlines()[-1] == "redis://127.0.0.1:6379/3 False"


def test_database_url_selects_postgresql(tmp_path):
    code = (
        "from django.db import connection;"
        " print(connection.vendor, connection.settings_dict['ENGINE'])"
    )
    env = {"DATABASE_URL": "postgres://postgres@127.0.0.1:5432/perfhub"}
    result = _manage("shell", "-c", code, env=env, tmp_path=tmp_path)
    # Django's backend with a cheaper health check (perfhub/postgresql/base.py).
    assert result.stdout.strip().splitlines()[-1] == "postgresql perfhub.postgresql"
