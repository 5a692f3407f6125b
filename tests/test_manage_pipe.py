"""`manage.py` whose reader goes away (`manage.py import_loadtest ... | head`)."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_closed_pipe_ends_the_command_without_a_traceback():
    # More output than a pipe buffers, so the writer meets the closed pipe.
    code = "for i in range(200_000): print(i)"
    reader = subprocess.Popen(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env={**os.environ, "DEBUG": "1"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout.readline() == b"0\n"
    reader.stdout.close()  # what `head -1` does once it has its line
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 1
    assert "Traceback" not in stderr, stderr
