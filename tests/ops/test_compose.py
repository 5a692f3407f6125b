"""docker-compose.yml, validated offline by Debian's `docker-compose config`, and held to the
commands `make smoke` runs (deploy/*.sh: one source for both)."""

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKER_COMPOSE = shutil.which("docker-compose")
pytestmark = pytest.mark.skipif(
    not DOCKER_COMPOSE, reason="needs Debian's docker-compose (apt-get install docker-compose)"
)
APP_SERVICES = ("migrate", "web", "worker", "beat")


def _compose_config(**env: str) -> subprocess.CompletedProcess:
    # Only what a deployer sets; nothing from this machine's environment leaks in.
    base = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run(
        [DOCKER_COMPOSE, "--project-directory", str(ROOT), "-f", str(ROOT / "docker-compose.yml"),
         "config"],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )  # fmt: skip


@pytest.fixture(scope="module")
def config() -> dict:
    result = _compose_config(SECRET_KEY="a-deployment-secret")
    assert result.returncode == 0, result.stderr
    return yaml.safe_load(result.stdout)


def _smoke():
    spec = importlib.util.spec_from_file_location("smoke", ROOT / "deploy" / "smoke.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_compose_validates_with_its_six_services(config):
    assert set(config["services"]) == {"postgres", "redis", *APP_SERVICES}


def test_compose_refuses_to_run_without_a_secret_key():
    result = _compose_config()
    assert result.returncode != 0
    assert "set SECRET_KEY in .env" in result.stderr


# ids not named like the `postgres` mark, which would skip that case on SQLite
@pytest.mark.parametrize(
    "service", ["postgres", "redis", *APP_SERVICES], ids=lambda name: f"{name}-service"
)
def test_every_service_has_a_health_check(config, service):
    assert config["services"][service]["healthcheck"]["test"]


def test_web_is_healthy_when_readyz_answers(config):
    test = config["services"]["web"]["healthcheck"]["test"]
    assert test == ["CMD", "python", "deploy/healthcheck.py", "http://127.0.0.1:8000/readyz"]


@pytest.mark.parametrize("service", APP_SERVICES)
def test_each_app_service_runs_its_deploy_script(config, service):
    assert config["services"][service]["command"] == [f"deploy/{service}.sh"]
    assert os.access(ROOT / "deploy" / f"{service}.sh", os.X_OK)


def test_make_smoke_starts_exactly_the_commands_compose_runs(config):
    expected = {name: config["services"][name]["command"] for name in APP_SERVICES}
    assert _smoke().compose_commands() == expected


def test_make_smoke_sets_every_variable_compose_sets(config):
    keys = {k for name in APP_SERVICES for k in config["services"][name]["environment"]}
    assert keys == _smoke().compose_environment_keys()


@pytest.mark.parametrize("service", ["web", "worker", "beat"])
def test_processes_start_after_the_migrations_succeed(config, service):
    depends = config["services"][service]["depends_on"]
    assert depends["migrate"]["condition"] == "service_completed_successfully"


def test_the_image_collects_static_files_and_serves_with_the_web_script():
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "deploy/collectstatic.sh" in dockerfile
    assert 'CMD ["deploy/web.sh"]' in dockerfile
