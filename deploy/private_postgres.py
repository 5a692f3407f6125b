"""A throwaway PostgreSQL cluster for `make chaos`: initdb into a temporary directory, trust
auth, a free port, so the faults can restart it without touching the machine's own server."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
from stack import StackFailure, check, free_port


def _as_postgres() -> list[str]:
    """PostgreSQL refuses to run as root: as root, run its tools as the `postgres` user."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


class PrivatePostgres:
    """A throwaway cluster: initdb into a temporary directory, trust auth, a free port."""

    def __init__(self) -> None:
        versions = sorted(
            glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2])
        )
        check(versions, "no PostgreSQL server binaries under /usr/lib/postgresql/*/bin")
        self.bin = Path(versions[-1])
        self.dir = Path(tempfile.mkdtemp(prefix="perfhub-chaos-pg-"))
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.data = self.dir / "data"
        self.port = free_port()
        self.url = f"postgres://postgres@127.0.0.1:{self.port}/perfhub"
        self.admin_url = f"postgres://postgres@127.0.0.1:{self.port}/postgres"

    def _pg(self, *args: str, timeout: float = 60) -> None:
        result = subprocess.run(
            [*_as_postgres(), str(self.bin / args[0]), *args[1:]],
            capture_output=True, text=True, timeout=timeout, cwd=self.dir,
        )  # fmt: skip
        check(result.returncode == 0, f"{args[0]} exited {result.returncode}: {result.stderr}")

    def create(self) -> None:
        self._pg("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync",
                 "-E", "UTF8")  # fmt: skip
        self.start()
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE perfhub")

    def start(self) -> None:
        # fsync off: a throwaway cluster; nothing here is meant to survive the machine.
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.dir} -c fsync=off "
            "-c full_page_writes=off -c max_connections=100"
        )
        self._pg("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-w",
                 "-o", options, "start")  # fmt: skip

    def restart(self) -> None:
        # -l again: without it the new server would write to (and hold open) our pipe.
        self._pg("pg_ctl", "-D", str(self.data), "-l", str(self.dir / "server.log"), "-m", "fast",
                 "-w", "restart")  # fmt: skip

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            try:
                self._pg("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except (StackFailure, subprocess.TimeoutExpired) as exc:
                print(f"chaos: stopping the private PostgreSQL: {exc}", file=sys.stderr)
        shutil.rmtree(self.dir, ignore_errors=True)

    def connect(self) -> psycopg.Connection:
        return psycopg.connect(self.url, autocommit=True)
