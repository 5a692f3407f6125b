"""deploy/gunicorn.conf.py: what each web worker sets up when it starts."""

import gc
import platform
import runpy
from pathlib import Path

import pytest

CONF = Path(__file__).resolve().parents[2] / "deploy" / "gunicorn.conf.py"


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
