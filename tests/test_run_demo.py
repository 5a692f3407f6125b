"""`make run`'s server: the embedded default with simulated agents and in-process jobs.

Runs the real commands in subprocesses on a throw-away SQLite file (the embedded default,
whatever DATABASE_URL the suite itself uses), so it checks what a newcomer gets.
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.e2e


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def demo_env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(PERFHUB_VAR_DIR=str(tmp_path), DEBUG="1")
    for args in (["migrate", "--no-input", "-v0"], ["seed_demo"]):
        subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True
        )
    return env


def _manage_output(env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return result.stdout.strip()


def test_the_demo_fills_a_service_series_within_a_minute(demo_env):
    token = _manage_output(demo_env, "create_agent_token", "--host", "reader")
    port = _free_port()
    command = ["run_demo", "--addr", f"127.0.0.1:{port}", "--interval", "1", "--jobs-every", "2"]
    server = subprocess.Popen(
        [sys.executable, "manage.py", *command],
        cwd=ROOT,
        env=demo_env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}/api/v1/services/support-chat-7b/metrics/"
    count = 0
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and count == 0:
            time.sleep(2)
            try:
                answer = requests.get(url, headers={"Authorization": f"Token {token}"}, timeout=5)
            except requests.ConnectionError:
                continue
            if answer.status_code == 200:
                e2e = answer.json()["overall_latency_ms"]["e2e"]
                count = next(p["count"] for p in e2e if p["q"] == 0.99)
    finally:
        server.terminate()
        output = server.communicate(timeout=20)[0].decode(errors="replace")
    assert count > 0, output[-3000:]
