"""perfhub/celery.py: what a worker's main process does before it forks its pool."""

import subprocess
import sys
from pathlib import Path

import pytest
from celery.signals import worker_init

from perfhub.celery import freeze_before_fork

ROOT = Path(__file__).resolve().parents[2]

# In a process of its own (freezing is for the life of a process): load what the worker's main
# process loads, freeze (or not), fork a child as the pool does, and print how many kB of its
# parent's memory the child's first full collection made its own.
CHILD_COPIES = """
import gc, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")
from perfhub.celery import app, freeze_before_fork
app.loader.import_default_modules()
if sys.argv[1] == "freeze":
    freeze_before_fork()

def private_dirty_kb():
    with open("/proc/self/smaps_rollup") as smaps:
        return next(int(line.split()[1]) for line in smaps if line.startswith("Private_Dirty:"))

read, write = os.pipe()
if os.fork() == 0:
    before = private_dirty_kb()
    gc.collect()
    os.write(write, str(private_dirty_kb() - before).encode())
    os._exit(0)
os.close(write)
print(os.read(read, 64).decode())
"""


def copied_kb(mode: str) -> int:
    done = subprocess.run(
        [sys.executable, "-c", CHILD_COPIES, mode],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return int(done.stdout.split()[-1])


def test_the_worker_freezes_its_loaded_objects_before_it_forks_the_pool():
    assert any(receiver is freeze_before_fork for _, receiver in worker_init.receivers)


@pytest.mark.skipif(not Path("/proc/self/smaps_rollup").exists(), reason="Linux's smaps_rollup")
def test_a_pool_childs_full_collection_leaves_the_loaded_application_shared():
    """Unfrozen, the collection writes to every object it scans, and the child copies ~60 MB
    of its parent's pages (measured here: 55-60 MB); frozen, almost nothing."""
    assert copied_kb("freeze") < 5_000 < copied_kb("plain")
