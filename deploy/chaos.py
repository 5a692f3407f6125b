"""`make chaos`: faults under load, on the production shape, with exactly-once accounting.

The stack is `make smoke`'s (deploy/stack.py: docker-compose.yml's migrate, web, worker and
beat commands as local processes, DEBUG off, timings shortened), but on a PRIVATE PostgreSQL
cluster (initdb into a temporary directory, a free port) and a PRIVATE redis-server, because
those are what the faults restart: the machine's shared servers are never touched. Real agents
push (`python -m demo.agent`: the perfhub-agent observing the engine simulator, per-request
rows and engine scrapes) and one is pulled by beat; a Celery worker rolls up, beat schedules.

While they run, one fault after another (each with the time it was injected):

- worker killed in a roll-up: the pushing host's row is locked from outside, so the roll-up
  that claimed its batches waits inside `rollup_host_minutes`; seen waiting there (its
  backend in pg_stat_activity, the batches claimed and not rolled up), the worker's whole
  process group gets SIGKILL; the lock is let go and the worker restarted, as compose would.
- PostgreSQL restarted (`pg_ctl restart -m fast`: every connection dropped).
- Redis restarted (no persistence: the broker's queue, rate-limit counters and the heartbeat
  are gone).
- the spool's disk full: the pushing agent's spool lives on a small tmpfs (a real ENOSPC)
  that is filled while web is down, so the agent must keep what it cannot spool.
- beat stopped "for 10 minutes": see BEAT_GAP (deploy/chaos_faults.py) for what is compressed
  and how.

Then the agents stop (their spools empty), the worker drains, and the report compares what
ingest accepted (its batches' own counts, and the raw rows) with the roll-ups (requests and
tokens per host and minute; hours; the service-merged rows): lost and doubled per fault
window and in total, what is stuck (batches not rolled up, claims, queued tasks, notifications
not sent), and webhook deliveries per alert firing. It prints a table, writes
var/chaos-report.json and exits 1 when anything is lost, doubled or stuck.
Everything started is stopped and the private servers' directories removed, also on failure.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parent))
# deploy/ is scripts, not a package: its modules import each other from this folder.
from smoke import AGENT_INTERVAL_S, PROFILE, SETUP_SCRIPT, TIMINGS, setup_inputs  # noqa: I001
from stack import ROOT, Stack, StackFailure, check, compose_commands, free_port
from stack import start_receiver, wait_for
from chaos_report import Accounting, print_report
from private_postgres import PrivatePostgres
from chaos_faults import BEAT_GAP, PULL_HOST, PUSH_HOST, REPLAY_HOST, SPOOL_TMPFS, ChaosFaults

REPORT = ROOT / "var" / "chaos-report.json"
FLEET_SCRIPT = ROOT / "deploy" / "chaos_setup.py"
# After smoke_setup.py (which imported what this uses): the replaying host's token.
REPLAY_TOKEN_SCRIPT = """
_, replay_token = token_issue_for_host_name(
    host_name=os.environ["CHAOS_REPLAY_HOST"], label="chaos"
)
print(json.dumps({"replay_token": replay_token}))
"""
# The pushing agent is slowed throughout (30% of requests 4x slower): the rule fires once and
# keeps firing through every fault; a second firing message would be a duplicate.
SLOWED = ["--simulate-slowdown-after", "0", "--simulate-slowdown-share", "0.3",
          "--simulate-slowdown-factor", "4"]  # fmt: skip
CHAOS_TIMINGS = {
    **TIMINGS,
    # A claim left by the killed worker is taken again after this (default 10 minutes).
    "PERFHUB_ROLLUP_CLAIM_TIMEOUT_S": "8",
    # A notification whose broker message the Redis restart lost is enqueued again after this
    # (10 minutes by default, checked every 5 minutes); loopback deliveries take milliseconds.
    "PERFHUB_NOTIFICATIONS_STUCK_AFTER_S": "15",
    "PERFHUB_NOTIFICATIONS_REQUEUE_EVERY_S": "5",
}
SUPERVISED = ("web", "worker", "beat")  # compose: restart: unless-stopped


# ------------------------------------------------------------------------------ the run


class Chaos(ChaosFaults, Accounting, Stack):
    prefix = "perfhub-chaos-"

    def __init__(self) -> None:
        super().__init__()
        self.pg = PrivatePostgres()
        self.redis_port = free_port()
        self.receiver = start_receiver()
        self.config: dict = {}
        self.faults: list[dict] = []
        self.spool_mount: Path | None = None

    # -- infrastructure

    def start_redis(self) -> None:
        self.start(
            "redis",
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no"],
        )  # fmt: skip
        wait_for("private Redis answers PING", self.redis_ping, 15, every=0.2)

    def redis_ping(self) -> bool:
        out = subprocess.run(
            ["redis-cli", "-p", str(self.redis_port), "ping"], capture_output=True, text=True
        )
        return out.stdout.strip() == "PONG"

    def redis(self, *args: str) -> str:
        out = subprocess.run(
            ["redis-cli", "-p", str(self.redis_port), "-n", "0", *args],
            capture_output=True, text=True, timeout=10,
        )  # fmt: skip
        return out.stdout.strip()

    def sql(self, query: str, params: tuple = ()) -> list[tuple]:
        with self.pg.connect() as conn:
            return conn.execute(query, params).fetchall()

    # -- the steps

    def main(self) -> None:
        commands = compose_commands()
        with self.step("private PostgreSQL (initdb) and Redis on free ports"):
            self.env(
                database_url=self.pg.url,
                redis_url=f"redis://127.0.0.1:{self.redis_port}/0",
                timings=CHAOS_TIMINGS,
            )
            self.pg.create()
            self.start_redis()
            self.log(f"  PostgreSQL {self.pg.bin.parent.name} on :{self.pg.port}, "
                     f"Redis on :{self.redis_port}")  # fmt: skip
        collect = self.spawn("collectstatic", ["deploy/collectstatic.sh"])
        with self.step("migrate (compose's migrate service)"):
            self.run("migrate", commands["migrate"], timeout=300)  # a loaded machine: slow
        with self.step("start web, worker and beat with compose's commands"):
            check(collect.wait(timeout=120) == 0, "collectstatic failed")
            for name in ("web", "worker", "beat"):
                self.start(name, commands[name])
        pull_port = free_port()
        with self.step("configure: demo fleet, alert rule, loopback webhook, tokens"):
            self.configure(pull_port)
        with self.step("agents: one pushing (slowed), one pulled by beat"):
            wait_for("/healthz", lambda: requests.get(self.base + "/healthz", timeout=2).ok, 60)
            self.start_agents(pull_port)
        with self.step("load: batches accepted and rolled up"):
            wait_for("a rolled-up batch", lambda: self.batches()["rolled_up"] >= 3, 40)
            self.alive()

        with self.step("fault: worker killed inside a roll-up"):
            self.kill_worker_in_rollup()
        with self.step("fault: PostgreSQL restarted"):
            self.restart_postgres()
        with self.step("fault: Redis restarted"):
            self.restart_redis()
        with self.step("fault: the spool's disk full while web is down"):
            self.fill_spool_disk()
        with self.step(f"fault: beat stopped ({BEAT_GAP.seconds // 60} minutes of sample time)"):
            self.stop_beat()

        with self.step("settle: agents stop, every spool empty, every batch rolled up"):
            self.settle()

    def configure(self, pull_port: int) -> None:
        script = "\n".join(
            [FLEET_SCRIPT.read_text(), SETUP_SCRIPT.read_text(), REPLAY_TOKEN_SCRIPT]
        )
        setup = self.run(
            "setup",
            ["python", "manage.py", "shell", "-c", script],
            env={
                **self._env,
                **setup_inputs(self.receiver.server_port, pull_port, PUSH_HOST, PULL_HOST),
                "CHAOS_REPLAY_HOST": REPLAY_HOST,
            },
        )
        *_, config, replay = setup.stdout.strip().splitlines()
        self.config = {**json.loads(config), **json.loads(replay)}

    def agent_cmd(self, slug: str, host: str, spool: Path) -> list[str]:
        return [
            sys.executable, "-m", "demo.agent", "--gpus", "1", "--service", slug,
            "--host", host, "--interval", str(AGENT_INTERVAL_S), "--spool-dir", str(spool),
        ]  # fmt: skip

    def mount_spool_disk(self, directory: Path) -> str:
        """A small tmpfs under the pushing agent's spool, for a real ENOSPC; '' when mounted,
        else why not (mounting needs root)."""
        directory.mkdir(parents=True)
        result = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={SPOOL_TMPFS}", "tmpfs", str(directory)],
            capture_output=True, text=True,
        )  # fmt: skip
        if result.returncode != 0:
            return (result.stderr or result.stdout).strip() or f"mount exited {result.returncode}"
        self.spool_mount = directory
        return ""

    def start_agents(self, pull_port: int) -> None:
        slug = self.config["pushed"]
        self.spools = {PUSH_HOST: self.tmp / "spool" / PUSH_HOST}
        self.no_tmpfs = self.mount_spool_disk(self.spools[PUSH_HOST])
        self.start(
            "agent-push",
            [*self.agent_cmd(slug, PUSH_HOST, self.spools[PUSH_HOST]), "--server", self.base,
             "--simulate-profile", f"{slug}:{PROFILE}", *SLOWED],
            env={**self._env, "PERFHUB_TOKEN": self.config["token"]},
        )  # fmt: skip
        pulled = self.config["pulled"]
        self.start(
            "agent-pull",
            [*self.agent_cmd(pulled, PULL_HOST, self.tmp / "spool" / PULL_HOST),
             "--serve", f"127.0.0.1:{pull_port}"],
        )  # fmt: skip

    # -- compose's restart policy

    def supervise(self) -> None:
        """Restart web, worker or beat when one exits, as compose's `restart: unless-stopped`
        does; each restart is recorded on the fault in progress, with the process's last
        CRITICAL or ERROR line (why it exited)."""
        for name in SUPERVISED:
            proc = self.procs.get(name)
            if proc is None or proc.poll() is None:
                continue
            why = [
                line.get("message", "")
                for line in self.log_lines(name)
                if line.get("level") in ("CRITICAL", "ERROR")
            ]
            restart = {
                "process": name,
                "exit_code": proc.returncode,
                "at": datetime.now(UTC).isoformat(timespec="seconds"),
                "why": (why or ["(no error logged)"])[-1][:300],
            }
            self.log(f"  {name} exited ({proc.returncode}): {restart['why']}; restarted")
            if self.faults:
                self.faults[-1].setdefault("restarts", []).append(restart)
            self.procs.pop(name)
            self.start(name, compose_commands()[name])

    # -- what the database says

    def batches(self) -> dict[str, int]:
        [row] = self.sql(
            "SELECT count(*), count(rolled_up_at), count(quarantined_at),"
            " count(*) FILTER (WHERE claim IS NOT NULL AND rolled_up_at IS NULL),"
            " coalesce(sum((counts->>'requests')::bigint), 0)"
            " FROM collectors_ingestbatch"
        )
        keys = ("accepted", "rolled_up", "quarantined", "claimed", "requests")
        return dict(zip(keys, row, strict=True))

    def fault(self, name: str, detail: str) -> dict:
        entry = {
            "fault": name,
            "injected_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "detail": detail,
            "before": self.batches(),
            "push_failures_before": self.agent_log_count("agent-push", "push of batch"),
        }
        self.faults.append(entry)
        self.log(f"  injected at {entry['injected_at']}: {detail}")
        return entry

    def recovered(self, entry: dict, timeout: float = 40, accepted: int | None = None) -> None:
        """After a fault: new batches accepted, and the `accepted` first batches (by default
        all accepted before the fault) rolled up."""
        accepted = entry["before"]["accepted"] if accepted is None else accepted

        def caught_up() -> bool:
            self.supervise()
            now = self.batches()
            return now["accepted"] > accepted + 2 and now["rolled_up"] + now["quarantined"] >= (
                accepted
            )

        wait_for(f"recovery from '{entry['fault']}'", caught_up, timeout, every=0.5)
        entry["recovered_at"] = datetime.now(UTC).isoformat(timespec="seconds")
        entry["after"] = self.batches()
        entry["web_5xx"] = sum(
            1
            for line in self.log_lines("web")
            if line.get("event") == "request"
            and line["status"] >= 500
            and entry["injected_at"] <= line["ts"][:19] + "+00:00" <= entry["recovered_at"]
        )
        failures = self.agent_log_count("agent-push", "push of batch")
        entry["agent_push_failures"] = failures - entry.pop("push_failures_before")

    def agent_log_count(self, name: str, text: str) -> int:
        return (self.tmp / f"{name}.log").read_text(errors="replace").count(text)

    # -- the faults: chaos_faults.ChaosFaults

    # -- the end

    def settle(self) -> None:
        for name in [n for n in self.procs if n.startswith("agent-")]:
            self.stop(name)
        for host, spool in self.spools.items():
            left = list(spool.glob("*.json")) if spool.exists() else []
            check(not left, f"{host}'s spool still holds {len(left)} batch(es)")

        def drained() -> bool:
            self.supervise()
            b = self.batches()
            return b["rolled_up"] + b["quarantined"] == b["accepted"]

        wait_for("every accepted batch rolled up", drained, 60, every=0.5)
        wait_for("every notification sent", lambda: not self.stuck()["notifications_not_sent"],
                 40, every=0.5)  # fmt: skip
        # Nothing stuck as the service itself sees it: beat's heartbeat fresh, no roll-up lag.
        wait_for("/readyz 200", lambda: requests.get(self.base + "/readyz", timeout=5).ok, 30)
        time.sleep(3)  # a last evaluation and delivery round

    # -- accounting

    def cleanup(self) -> None:
        self.stop_all()
        self.receiver.shutdown()
        self.receiver.server_close()
        if self.spool_mount is not None:
            subprocess.run(["umount", "-l", str(self.spool_mount)], check=False)
        self.pg.destroy()


def main() -> int:
    chaos = Chaos()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    ok = False
    report: dict = {}
    try:
        chaos.main()
        report, problems = chaos.report()
        ok = not problems
    except StackFailure as exc:
        chaos.log(f"CHAOS FAILED at {exc}")
        print(chaos.tails(), file=sys.stderr)
        report = {"faults": chaos.faults, "problems": [str(exc)]}
    except KeyboardInterrupt:
        chaos.log("interrupted")
    finally:
        chaos.cleanup()
    total = time.monotonic() - chaos.started
    report["seconds"] = round(total, 1)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2, default=str))
    if "accounting" in report:
        print_report(report)
    for problem in report.get("problems", []):
        print(f"PROBLEM: {problem}", file=sys.stderr)
    if not ok:
        print(f"chaos: FAILED after {total:.0f} s; logs kept in {chaos.tmp}", file=sys.stderr)
        return 1
    shutil.rmtree(chaos.tmp, ignore_errors=True)
    print(
        f"\nchaos: {len(chaos.faults)} faults, 0 lost, 0 doubled, nothing stuck, in {total:.0f} s"
    )
    print(f"report: {REPORT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
