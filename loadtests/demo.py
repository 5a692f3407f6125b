"""Demo load tests: real-format result files under `demo/loadtests/<service slug>/`.

Each file goes through the same importer as an upload (`import_loadtest_file`), its format
detected from its content, so the demo shows exactly what a user's file would. Importing is
idempotent (a run is identified by the file's digest and its position in it). The 13B sweep
(`code-review-13b/demo-13b-concurrency-sweep.jsonl`, `vllm bench serve --append-result` JSON
lines) has the seed's shape: up to concurrency 16 each doubling buys x1.78 throughput for x1.04
to x1.31 P99, 16 -> 32 +20% for x1.5, 32 -> 64 +3% for x2.1 more; so the sweep page names 16.
Its end-to-end times obey Little's law (throughput x mean E2E = 96% of the slots busy).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from django.conf import settings

from dossiers.models import Service
from loadtests.importing import import_loadtest_file
from loadtests.models import LoadTest

DEMO_LOADTESTS = Path(settings.BASE_DIR) / "demo" / "loadtests"


def demo_files(slug: str, folder: Path = DEMO_LOADTESTS) -> list[Path]:
    """The demo's load-test files for the service `slug`, in name order."""
    directory = folder / slug
    return sorted(p for p in directory.iterdir() if p.is_file()) if directory.is_dir() else []


def add_demo_loadtests(services: Iterable[Service], folder: Path = DEMO_LOADTESTS) -> int:
    """Import the demo files of each service among `services`; the number of runs stored."""
    runs = 0
    for service in services:
        for path in demo_files(service.slug, folder):
            runs += len(
                import_loadtest_file(
                    service=service,
                    content=path.read_bytes(),
                    filename=path.name,
                    origin=LoadTest.Origin.DEMO,
                )
            )
    return runs
