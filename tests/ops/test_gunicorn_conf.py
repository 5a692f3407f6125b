"""deploy/gunicorn.conf.py: what the master and each web worker set up when they start."""

import gc
import os
import platform
import runpy
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from deploy.stack import free_port, wait_for

ROOT = Path(__file__).resolve().parents[2]
CONF = ROOT / "deploy" / "gunicorn.conf.py"


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_worker_fixes_the_mmap_threshold_so_large_bodies_do_not_fragment_its_heap():
    conf = runpy.run_path(str(CONF))
    assert conf["fix_mmap_threshold"]() is True


def test_a_worker_puts_the_loaded_application_out_of_the_collectors_reach():
    """Otherwise every full collection scans the application's objects again: a ~90 ms pause
    of the request it lands on (bench/ingest.py's slowest request, 105-110 ms against 15-21)."""
    conf = runpy.run_path(str(CONF))
    try:
        conf["post_worker_init"](None)
        assert gc.get_freeze_count() > 10_000  # the application's objects, not a handful
    finally:
        gc.unfreeze()


def test_the_master_puts_the_loaded_application_out_of_the_collectors_reach():
    conf = runpy.run_path(str(CONF))
    try:
        conf["when_ready"](None)
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()


def private_mb(pid: int) -> float:
    with open(f"/proc/{pid}/smaps_rollup") as smaps:
        fields = dict(line.split()[:2] for line in smaps if line.split()[0].endswith(":"))
    return (int(fields["Private_Dirty:"]) + int(fields["Private_Clean:"])) / 1024


def answers_20_times(base: str) -> bool:
    for _ in range(20):
        requests.get(f"{base}/healthz", timeout=5).raise_for_status()
    return True


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux's smaps_rollup")
def test_real_workers_share_the_application_their_master_loaded(tmp_path):
    """Each worker loading the application itself held ~125 MB of private memory; forked from
    a master that loaded and froze it, ~17 MB (73 MB when the master did not freeze it: the
    worker's first full collection copies every page it scans)."""
    port = free_port()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "perfhub.settings",
        "PERFHUB_VAR_DIR": str(tmp_path),
        "DEBUG": "1",
    }
    env.pop("DATABASE_URL", None)  # /healthz reads no database
    server = subprocess.Popen(
        [
            *(sys.executable, "-m", "gunicorn", "perfhub.wsgi:application"),
            *("--config", str(CONF), "--bind", f"127.0.0.1:{port}", "--workers", "2"),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for("gunicorn answers /healthz", lambda: answers_20_times(base), 60, every=0.3)
        children = Path(f"/proc/{server.pid}/task/{server.pid}/children")
        # one worker may answer every request before the other is up
        wait_for("both workers started", lambda: len(children.read_text().split()) == 2, 60, 0.1)
        time.sleep(1)  # its start-up (post_worker_init) done
        children = children.read_text().split()
        assert max(private_mb(int(pid)) for pid in children) < 40
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=30)
