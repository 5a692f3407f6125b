import json
import subprocess
import sys
from pathlib import Path

from collectors.agent.cli import EX_TEMPFAIL, main
from demo.agent import main as simulated_main
from tests.factories.agent import TOKEN

from .contract import contract_errors

ROOT = Path(__file__).resolve().parents[3]


def test_once_dry_run_prints_one_batch_that_follows_the_contract(capsys, tmp_path):
    code = simulated_main(
        ["--gpus", "2", "--service", "chat-7b", "--host", "demo-gpu-01",
         "--once", "--dry-run"],
        environ={"XDG_STATE_HOME": str(tmp_path)},
    )  # fmt: skip

    assert code == 0
    batch = json.loads(capsys.readouterr().out)
    assert contract_errors(batch) == []
    assert batch["host"] == "demo-gpu-01"
    assert batch["agent_version"] == "0.1.0"
    assert len(batch["gpus"]) == 2
    assert [(s["service"], s["source"]) for s in batch["scrapes"]] == [("chat-7b", "vllm")]
    assert batch["requests"]
    assert not (tmp_path / "perfhub-agent").exists()  # a dry run never touches the spool


def test_once_pushes_one_batch_to_the_server(ingest, tmp_path):
    url, state = ingest

    code = simulated_main(
        ["--service", "chat-7b", "--host", "h", "--once", "--server", url,
         "--spool-dir", str(tmp_path)],
        environ={"PERFHUB_TOKEN": TOKEN},
    )  # fmt: skip

    assert code == 0
    assert len(state.stored) == 1


def test_once_exits_75_when_the_batch_had_to_be_spooled(closed_port_url, tmp_path):
    code = simulated_main(
        ["--service", "chat-7b", "--host", "h", "--once", "--server",
         closed_port_url, "--token", TOKEN, "--spool-dir", str(tmp_path), "--push-timeout", "1"],
        environ={},
    )  # fmt: skip

    assert code == EX_TEMPFAIL
    assert len(list(tmp_path.glob("*.json"))) == 1


def test_it_exits_2_with_the_setting_named_when_settings_are_bad(capsys):
    code = main(["--host", "h", "--engine", "vllm=http://x/metrics"], environ={})

    assert code == 2
    assert "engine 'vllm=http://x/metrics': names no service" in capsys.readouterr().err


def test_it_runs_as_a_module_without_importing_django_or_the_demo():
    script = (
        "import runpy, sys\n"
        "sys.argv = ['collectors.agent', '--service', 's', '--host', 'h', '--once', '--dry-run']\n"
        "try:\n"
        "    runpy.run_module('collectors.agent', run_name='__main__')\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('django', 'rest_framework', 'dossiers', 'perfhub', 'analysis', 'demo'))\n"
        "assert not loaded, loaded\n"
    )

    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    assert contract_errors(json.loads(result.stdout)) == []
