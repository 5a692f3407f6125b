"""deploy/gunicorn.conf.py: what each web worker sets up when it starts."""

import platform
import runpy
from pathlib import Path

import pytest

CONF = Path(__file__).resolve().parents[2] / "deploy" / "gunicorn.conf.py"


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt is glibc's")
def test_a_worker_fixes_the_mmap_threshold_so_large_bodies_do_not_fragment_its_heap():
    conf = runpy.run_path(str(CONF))
    assert conf["fix_mmap_threshold"]() is True
