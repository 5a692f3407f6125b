"""`make chaos`'s accounting: what ingest accepted against what the roll-ups hold (lost and
doubled, per fault window and in total), what is stuck, and webhook deliveries per alert firing,
read from the private stack once the run has settled; and the table it prints."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

# What each fault did, as the report shows it (keys of a fault's entry).
EVIDENCE = ("batches_claimed_by_killed_roll_up", "agent_push_failures", "web_5xx",
            "postgres_up_since", "redis_keys_after_restart", "agent_held_in_memory",
            "backlog_batches", "backlog_sample_minutes", "beat_stopped_s")  # fmt: skip


def minute_start(epoch_minute: int) -> datetime:
    return datetime.fromtimestamp(epoch_minute * 60, tz=UTC)


def compare(raw: dict, rolled: dict, keys: set) -> tuple[Counter, Counter]:
    """Lost (accepted, not rolled up) and doubled (rolled up beyond what was accepted) over
    `keys` (host, minute), for requests and both token counts."""
    lost: Counter = Counter()
    doubled: Counter = Counter()
    for key in keys:
        a, r = raw.get(key, (0, 0, 0)), rolled.get(key, (0, 0, 0))
        for i, what in enumerate(("requests", "prompt_tokens", "output_tokens")):
            lost[what] += max(0, a[i] - r[i])
            doubled[what] += max(0, r[i] - a[i])
    return lost, doubled


class Accounting:
    """The report's reads, mixed into `chaos.Chaos`, which provides `sql`, `redis`, `batches`,
    `faults`, `receiver` and `agent_log_count`."""

    def account(self) -> dict:
        """Accepted vs rolled up, per host and minute (requests, prompt and output tokens)."""
        raw = {
            (h, m): (n, p, o)
            for h, m, n, p, o in self.sql(
                "SELECT host_id, date_trunc('minute', ts), count(*),"
                " coalesce(sum(prompt_tokens), 0), coalesce(sum(output_tokens), 0)"
                " FROM collectors_requestsample GROUP BY 1, 2"
            )
        }
        rolled = {
            (h, m): (n, p, o)
            for h, m, n, p, o in self.sql(
                "SELECT host_id, start, sum(requests), sum(prompt_tokens), sum(output_tokens)"
                " FROM collectors_servicerollup WHERE resolution_s = 60 GROUP BY 1, 2"
            )
        }
        lost, doubled = compare(raw, rolled, set(raw) | set(rolled))
        # Per fault: the host-minutes the batches received from its injection to the next
        # fault's brought in (the replayed gap's minutes count for beat's stop).
        received = self.sql(
            "SELECT host_id, received_at, minutes, (counts->>'requests')::bigint"
            " FROM collectors_ingestbatch"
        )
        injected = [f for f in self.faults if "before" in f]
        starts = [datetime.fromisoformat(f["injected_at"]) for f in injected]
        for i, entry in enumerate(injected):
            end = starts[i + 1] if i + 1 < len(starts) else datetime.max.replace(tzinfo=UTC)
            mine = [b for b in received if starts[i] <= b[1] < end]
            keys = {(h, minute_start(m)) for h, _, ms, _ in mine for m in ms}
            f_lost, f_doubled = compare(raw, rolled, keys)
            entry["requests_accepted"] = sum(n or 0 for *_, n in mine)
            entry["lost"] = f_lost["requests"]
            entry["doubled"] = f_doubled["requests"]
        batches = self.batches()
        [(hourly,)] = self.sql(
            "SELECT coalesce(sum(requests), 0) FROM collectors_servicerollup"
            " WHERE resolution_s = 3600"
        )
        [(merged,)] = self.sql(
            "SELECT coalesce(sum(requests), 0) FROM collectors_servicemergedrollup"
            " WHERE resolution_s = 60"
        )
        accepted_rows = sum(v[0] for v in raw.values())
        return {
            "batches_accepted": batches["accepted"],
            "requests_accepted": batches["requests"],  # ingest's own count, per batch
            "request_rows": accepted_rows,
            "requests_rolled_up": sum(v[0] for v in rolled.values()),
            "requests_hourly": int(hourly),
            "requests_merged": int(merged),
            "minutes_compared": len(set(raw) | set(rolled)),
            "lost": dict(lost),
            "doubled": dict(doubled),
        }

    def stuck(self) -> dict:
        batches = self.batches()
        [(sending,)] = self.sql("SELECT count(*) FROM alerts_notification WHERE status <> 'sent'")
        return {
            "batches_not_rolled_up": batches["accepted"] - batches["rolled_up"],
            "batches_quarantined": batches["quarantined"],
            "claims_open": batches["claimed"],
            "queued_tasks": int(self.redis("LLEN", "celery") or 0),
            "notifications_not_sent": sending,
        }

    def alerts(self) -> dict:
        """Webhook deliveries per alert firing: each firing told once, each resolution once."""
        firings = self.sql(
            "SELECT fingerprint, fired_at, resolved_at FROM alerts_alertinstance"
            " WHERE fired_at IS NOT NULL"
        )
        with self.receiver.lock:
            bodies = list(self.receiver.bodies)
        told: Counter = Counter()
        for body in bodies:
            for alert in body["alerts"]:
                starts = datetime.fromisoformat(alert["startsAt"])
                told[(alert["fingerprint"], starts, body["status"])] += 1
        per_firing = []
        for fingerprint, starts, resolved_at in firings:
            per_firing.append(
                {
                    "fingerprint": fingerprint,
                    "fired_at": starts.astimezone(UTC).isoformat(timespec="seconds"),
                    "firing_messages": told[(fingerprint, starts, "firing")],
                    "resolved": resolved_at is not None,
                    "resolved_messages": told[(fingerprint, starts, "resolved")],
                }
            )
        return {"firings": per_firing, "messages": len(bodies), "bodies": bodies}

    def report(self) -> tuple[dict, list[str]]:
        accounting, stuck, alerts = self.account(), self.stuck(), self.alerts()
        problems = []
        lost = sum(accounting["lost"].values())
        doubled = sum(accounting["doubled"].values())
        if lost:
            problems.append(f"lost: {accounting['lost']}")
        if doubled:
            problems.append(f"doubled: {accounting['doubled']}")
        n = accounting["request_rows"]
        for key in (
            "requests_accepted",
            "requests_rolled_up",
            "requests_hourly",
            "requests_merged",
        ):
            if accounting[key] != n:
                problems.append(f"{key} is {accounting[key]}, the accepted rows {n}")
        # Batches an agent could not keep (a failed spool write, a spool over its bound): never
        # accepted, so no server count shows them; the agents' logs do.
        dropped = {
            name: self.agent_log_count(name, "delivering a batch failed")
            + self.agent_log_count(name, "their data is lost")
            for name in ("agent-push", "agent-replay")
        }
        accounting["agent_dropped"] = dropped
        if sum(dropped.values()):
            problems.append(f"agents dropped batches: {dropped}")
        problems += [f"stuck: {k} = {v}" for k, v in stuck.items() if v]
        if not alerts["firings"]:
            problems.append("the rule never fired: no delivery to count")
        for f in alerts["firings"]:
            if f["firing_messages"] != 1:
                problems.append(f"alert {f['fingerprint']} firing told {f['firing_messages']}x")
            if f["resolved"] and f["resolved_messages"] != 1:
                problems.append(
                    f"alert {f['fingerprint']} resolution told {f['resolved_messages']}x"
                )
        report = {
            "faults": self.faults,
            "accounting": accounting,
            "stuck": stuck,
            "alerts": alerts,
            "problems": problems,
        }
        return report, problems


def print_report(report: dict) -> None:
    print(f"\n{'fault':<32} {'injected':>8} {'accepted':>9} {'lost':>5} {'doubled':>7}  evidence")
    for f in report["faults"]:
        if "skipped" in f:
            print(f"{f['fault']:<32} skipped: {f['skipped']}")
            continue
        evidence = {k: f[k] for k in EVIDENCE if k in f}
        if f.get("restarts"):
            evidence["restarted"] = [r["process"] for r in f["restarts"]]
        print(f"{f['fault']:<32} {f['injected_at'][11:19]:>8} {f.get('requests_accepted', '-'):>9} "
              f"{f.get('lost', '-'):>5} {f.get('doubled', '-'):>7}  {evidence}")  # fmt: skip
    a = report["accounting"]
    print(
        f"\nrequests: accepted {a['request_rows']} (ingest counted {a['requests_accepted']}), "
        f"rolled up {a['requests_rolled_up']} (hourly {a['requests_hourly']}, "
        f"merged {a['requests_merged']}) over {a['minutes_compared']} host-minutes"
    )
    print(f"lost: {a['lost']}   doubled: {a['doubled']}")
    print(f"stuck: {report['stuck']}")
    for f in report["alerts"]["firings"]:
        resolved = f", resolved told {f['resolved_messages']}x" if f["resolved"] else ""
        print(
            f"alert {f['fingerprint']} fired {f['fired_at']}: "
            f"told {f['firing_messages']}x{resolved}"
        )
