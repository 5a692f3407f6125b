"""The faults `make chaos` injects under load (deploy/chaos.py says which and why), one method
each, and what they need: the hosts' names, the spool's disk, the backdated spool of the agent
that comes back when beat is stopped. A mixin of `chaos.Chaos`, whose helpers (sql, fault,
recovered, start and stop, agent_log_count) the faults use through `self`.
"""

from __future__ import annotations

import signal
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import requests

# deploy/ is scripts, not a package: its modules import each other from this folder.
from smoke import AGENT_INTERVAL_S
from stack import ROOT, check, compose_commands, wait_for

PUSH_HOST, PULL_HOST, REPLAY_HOST = "chaos-gpu-01", "chaos-pull-01", "chaos-replay-01"

# "Beat stopped for 10 minutes", compressed: beat is really stopped for BEAT_STOP_S while the
# live agents keep pushing, and a third agent comes back from a BEAT_GAP outage of its own: its
# spool holds BEAT_GAP of batches (written by the agent's own Spool, the simulator's clock set
# back), which the real agent replays on start. When beat starts again (with its schedule file,
# whose entries are all overdue) the roll-ups catch up on more than BEAT_GAP of sample time.
BEAT_GAP = timedelta(minutes=10)
# The replaying agent runs at the agent's default interval (10 s): 60 batches for the gap, so
# its replay stays under ingest's rate limit (120 pushes a minute per host; at the live agents'
# 2 s, 300 batches would be throttled to 2.5 minutes of replay, correctly but too slowly here).
REPLAY_INTERVAL_S = 10
BEAT_STOP_S = 20
SPOOL_TMPFS = "256k"


def write_backdated_spool(
    directory: Path, host: str, slug: str, gap: timedelta, interval: float
) -> int:
    """The spool an agent cut off for `gap` would hold: one batch per interval, from the
    simulator on a clock set back by `gap`, written by the agent's own Spool. Returns how many."""
    sys.path.insert(0, str(ROOT))
    from collectors.agent.batch import new_batch
    from collectors.agent.spool import Spool
    from demo.simulator import Simulator

    now = time.time()
    clock = [now - gap.total_seconds()]
    simulator = Simulator(host=host, services=[slug], gpus=1, clock=lambda: clock[0])
    spool = Spool(directory, max_bytes=256 * 1024 * 1024)
    written = 0
    while clock[0] + interval < now:
        clock[0] += interval
        gpus, scrapes, requests_ = simulator.step()
        at = datetime.fromtimestamp(clock[0], UTC)
        spool.put(new_batch(host=host, gpus=gpus, scrapes=scrapes, requests=requests_, now=at))
        written += 1
    return written


class ChaosFaults:
    """The faults, in the order `Chaos.main` injects them."""

    def kill_worker_in_rollup(self) -> None:
        [(host_id,)] = self.sql("SELECT id FROM collectors_host WHERE name = %s", (PUSH_HOST,))
        with self.pg.connect() as holder:
            # Hold the host's row: the roll-up that claims its batches waits on this lock (its
            # FOR UPDATE conflicts with KEY SHARE; ingest's writes to the host row do not).
            holder.execute("BEGIN")
            holder.execute("SELECT 1 FROM collectors_host WHERE id = %s FOR KEY SHARE", (host_id,))

            def waiting_rollup() -> int:
                blocked = self.sql(
                    "SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                    " AND query LIKE '%%collectors_host%%FOR UPDATE%%' AND pid <> %s",
                    (holder.info.backend_pid,),
                )
                claimed = self.sql(
                    "SELECT count(*) FROM collectors_ingestbatch WHERE host_id = %s"
                    " AND claim IS NOT NULL AND rolled_up_at IS NULL",
                    (host_id,),
                )[0][0]
                return claimed if blocked and claimed else 0

            claimed = wait_for("a roll-up waiting inside the host's lock", waiting_rollup, 30, 0.2)
            entry = self.fault(
                "worker killed inside a roll-up",
                f"SIGKILL to the worker's process group while its roll-up held a claim on "
                f"{claimed} batch(es) of {PUSH_HOST} and waited for the host's row",
            )
            entry["batches_claimed_by_killed_roll_up"] = claimed
            self.stop("worker", signal.SIGKILL, timeout=5)
            holder.execute("ROLLBACK")
        self.start("worker", compose_commands()["worker"])
        self.recovered(entry)

    def restart_postgres(self) -> None:
        entry = self.fault(
            "PostgreSQL restarted",
            "pg_ctl restart -m fast under load: every connection of web, worker and beat dropped",
        )
        self.pg.restart()
        [(started,)] = self.sql("SELECT pg_postmaster_start_time()")
        entry["postgres_up_since"] = started.astimezone(UTC).isoformat(timespec="seconds")
        self.recovered(entry)

    def restart_redis(self) -> None:
        entry = self.fault(
            "Redis restarted",
            "redis-server stopped and started again without persistence: the broker's queue, "
            "rate-limit counters and beat's heartbeat gone",
        )
        self.stop("redis")
        self.start_redis()
        entry["redis_keys_after_restart"] = int(self.redis("DBSIZE") or 0)  # 0: all gone
        self.recovered(entry)

    def fill_spool_disk(self) -> None:
        if self.no_tmpfs:
            self.faults.append({"fault": "the spool's disk full", "skipped": self.no_tmpfs})
            self.log(f"  SKIPPED: no tmpfs for the spool ({self.no_tmpfs})")
            return
        filler = self.spool_mount / "filler"
        try:
            with open(filler, "wb", buffering=0) as handle:
                while True:
                    handle.write(b"\0" * 4096)
        except OSError:  # ENOSPC: the disk is full
            pass
        entry = self.fault(
            "the spool's disk full",
            f"the pushing agent's spool (a {SPOOL_TMPFS} tmpfs) filled to ENOSPC, then web "
            f"stopped for {3 * AGENT_INTERVAL_S} s so its batches had to be kept",
        )
        spooled = self.agent_log_count("agent-push", "push of batch")
        self.stop("web")
        wait_for(
            "the agent failing to push",
            lambda: self.agent_log_count("agent-push", "push of batch") > spooled,
            20,
            every=0.5,
        )
        time.sleep(2 * AGENT_INTERVAL_S)
        self.start("web", compose_commands()["web"])
        wait_for("/healthz", lambda: requests.get(self.base + "/healthz", timeout=2).ok, 60, 0.5)
        filler.unlink()
        self.recovered(entry)
        # The fault happened only if the agent met the full disk (and kept the batches).
        entry["agent_held_in_memory"] = self.agent_log_count("agent-push", "held in memory")
        check(entry["agent_held_in_memory"], "the agent never met the full disk")

    def stop_beat(self) -> None:
        replay = self.tmp / "spool" / REPLAY_HOST
        slug = self.config["pulled"]
        batches = write_backdated_spool(replay, REPLAY_HOST, slug, BEAT_GAP, REPLAY_INTERVAL_S)
        self.spools[REPLAY_HOST] = replay
        entry = self.fault(
            "beat stopped",
            f"beat stopped for {BEAT_STOP_S}+ s while the agents pushed and a third agent "
            f"replayed {batches} spooled batches ({BEAT_GAP.seconds // 60} minutes of sample "
            "time); then beat started again on its old schedule file",
        )
        self.stop("beat")
        began = time.monotonic()
        self.start(
            "agent-replay",
            [
                *self.agent_cmd(slug, REPLAY_HOST, replay),
                "--server",
                self.base,
                "--interval",
                str(REPLAY_INTERVAL_S),
            ],
            env={**self._env, "PERFHUB_TOKEN": self.config["replay_token"]},
        )
        wait_for("the replaying agent's spool empty", lambda: not any(replay.glob("*.json")), 90)
        time.sleep(max(0.0, BEAT_STOP_S - (time.monotonic() - began)))
        entry["beat_stopped_s"] = round(time.monotonic() - began, 1)
        pending = self.batches()
        entry["backlog_batches"] = pending["accepted"] - pending["rolled_up"]
        [(first, last)] = self.sql(
            "SELECT min(minute::bigint), max(minute::bigint) FROM collectors_ingestbatch,"
            " jsonb_array_elements_text(minutes) AS minute WHERE rolled_up_at IS NULL"
        )
        entry["backlog_sample_minutes"] = (last - first + 1) if first is not None else 0
        self.start("beat", compose_commands()["beat"])
        self.recovered(entry, timeout=60, accepted=pending["accepted"])
