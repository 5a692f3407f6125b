"""CPU seconds spent by each side of an ingest round, from /proc (Linux): the gunicorn workers,
every PostgreSQL process, and this process (the bench's client threads, or the reference's
COPY client). Throughput ratios on a shared 2-core machine move with whatever else runs;
CPU per sample does not, so the bench prints both."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Cpu:
    workers: float = 0.0
    postgres: float = 0.0
    client: float = 0.0

    @property
    def total(self) -> float:
        return self.workers + self.postgres + self.client

    def __sub__(self, other: Cpu) -> Cpu:
        return Cpu(
            self.workers - other.workers,
            self.postgres - other.postgres,
            self.client - other.client,
        )


def _seconds(pid: int) -> float:
    """utime + stime of `pid` itself (not of children it reaped)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime (fields 14, 15)


def _postgres_pids() -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "comm").read_text().strip() in ("postgres", "postmaster"):
                    pids.append(int(entry.name))
            except OSError:
                continue  # it ended meanwhile
    return pids


def _sum(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            total += _seconds(pid)
        except (OSError, IndexError):
            continue
    return total


def worker_pids(master_pid: int) -> list[int]:
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children")
    return [int(p) for p in children.read_text().split()]


class measure:
    """`with measure(workers) as m: ...` then `m.used` (a Cpu) for the block. A PostgreSQL
    process that ends inside the block takes its CPU with it: open the connections before."""

    def __init__(self, workers: list[int] = ()) -> None:
        self.workers = list(workers)

    def __enter__(self) -> measure:
        self.postgres = _postgres_pids()
        self.before = Cpu(_sum(self.workers), _sum(self.postgres), time.process_time())
        return self

    def __exit__(self, *exc) -> None:
        # Backends that started during the block count whole (they began at zero).
        postgres = _sum(sorted(set(self.postgres) | set(_postgres_pids())))
        after = Cpu(_sum(self.workers), postgres, time.process_time())
        self.used = after - self.before
