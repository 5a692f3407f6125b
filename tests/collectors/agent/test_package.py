"""The agent installs on its own: `pip install ./collectors/agent` gives `perfhub-agent`."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

AGENT_DIR = Path(__file__).resolve().parents[3] / "collectors" / "agent"


def test_the_agent_package_installs_a_perfhub_agent_command_without_the_server(tmp_path):
    source = tmp_path / "src"
    shutil.copytree(AGENT_DIR, source, ignore=shutil.ignore_patterns("__pycache__"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(target), str(source)],
        check=True, capture_output=True,
    )  # fmt: skip
    # Run from an empty folder with only the installed package added: not the repository.
    env = {**os.environ, "PYTHONPATH": str(target)}
    result = subprocess.run(
        [sys.executable, str(target / "bin" / "perfhub-agent"), "--help"],
        cwd=tmp_path, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "--engine" in result.stdout
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, perfhub_agent.agent; print(' '.join(sys.modules))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    server = {"django", "rest_framework", "collectors", "dossiers", "analysis", "perfhub"}
    assert not server & {name.split(".")[0] for name in loaded}
