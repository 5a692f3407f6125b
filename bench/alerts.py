"""Alert budget (docs/measurements.md, issue 14): evaluating 10,000 services' rules fits in one
evaluation interval (60 s) on one worker, and the time is linear in services.

    DATABASE_URL=postgres://... .venv/bin/python bench/alerts.py [--services 1000] [--hosts 4]
        [--workers 2] [--compare]

Data: `--services` services (spread over `--teams` teams, each team with one webhook receiver
pointing at a closed loopback port), each with its default rules (`default_rule_specs`: three
P99 SLO rules, GPU waiting, SM gap, KV cache, cost vs baseline, no data, margin, and the
four SLO burn rules of the SLO its P99 fields imply) and a current
baseline, served by `--hosts` hosts of its own with `--gpus` GPUs each. Every minute of the
hour the longest rule window and the no-data lookback read, plus the minutes evaluated, each
host has one 1-minute `ServiceRollup` row (traffic, tokens, scraped gauges, e2e/TTFT/TPOT
sketches) and one `GpuRollup` row per GPU, and each service one `ServiceMergedRollup` row (the
roll-up's merge of its hosts' rows, computed once per kind of row by collectors' own merge),
COPYed through `collectors.storage` a chunk of services at a time with pre-serialized sketch
blobs. Beside them, what the roll-up writes from those minutes: each whole 5-minute period's
and hour's per-host, per-GPU and service-merged row (collectors' own merges of the minute
rows, computed once per pattern of minutes). The services' P99 fields imply an SLO, so each
also has the four default SLO burn rules (1 h, 6 h, 3 d and 10 min windows): for them
`--slo-hours` hours before the minutes hold hourly per-host and merged rows, and the minutes
at the 6 h and 3 d windows' far edges minute rows (no GPU rows: SLO reads need none).
Each row with pushed requests carries the exact joint count of the implied SLO's key, as the
roll-up writes it (`--no-exact-counts`: none, as for minutes rolled up before the SLO existed,
so the SLO reads merge sketches).
Minute k uses one of three variants (e2e median, GPU-Util, KV cache, tokens), so every
window's figures, and so every rule's last value, move each minute as in production. A
`--breaching` share of services have an e2e P99 above their SLO from a staggered minute on,
so during the timed rounds some alerts go pending, some go firing and notifications are
planned. Everything goes into a throw-away test database (`bench_alerts_<name>`), dropped at
the end. The seeding is `bench/alerts_fleet.py`'s.

Timed: `alerts.services.evaluate_all(now)` for consecutive minutes, as the beat task calls it.
`--warmup` untimed-for-the-budget rounds first (the very first evaluation also records every
rule's initial health, once, and the P99 alerts need 5 minutes pending before they fire), then
`--rounds` timed rounds, each a new minute. Notification sending is left to other workers, as
in production with a broker: Celery is switched from eager to its in-memory broker, so the
evaluation pays for planning and enqueueing, never for HTTP. Prints the seeding size, per round
seconds, rules evaluated, queries (CaptureQueriesContext) and their seconds in the database
(the client's clock around each statement), alerts by state and notifications
planned, and the ratio of the slowest timed round to the 60 s interval (target <= 0.8), and
the seconds per 1,000 services (linear in services: the same at any size).

`--compare`: timed rounds alternate between reading windows from minute rows only (what
evaluation did before issue 26: `alerts.sources.WINDOW_RESOLUTIONS = (MINUTE,)`, the
same-process reference) and the default (5-minute rows inside a window), and the ratio of
their means is printed. `--workers N`: each timed round forks N processes that evaluate one
shard each (`evaluate_all(shard=(k, N))`, what the `alerts.evaluate_shard` tasks do) at the
same time, and prints each worker's seconds and the slowest one over the interval.
`--profile`: cProfile's top functions of each timed round (cumulative, then own time) and
its statements grouped by shape (literals as `?`), by database seconds: which side to cut.
A measurement, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import re
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

# The seeding lives beside this script; `bench` imports from ROOT (on sys.path above), whatever
# the working directory.
from bench.alerts_fleet import MINUTE_S, seed  # noqa: E402

INTERVAL_S = 60.0  # the beat schedule of alerts.evaluate
P99_FOR_MINUTES = 5  # for_s of the default P99 rules: pending this long before firing


def evaluate_round(now: datetime, profile: bool = False) -> dict:
    """One timed evaluation at `now`; its seconds, queries and what it did. `profile`
    prints where its time went (cProfile, cumulative, top 30)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from alerts.models import AlertInstance
    from alerts.services import evaluate_all

    profiler = cProfile.Profile() if profile else None
    # The query log keeps the last 9,000 queries: empty it, or a long run's counts wrap.
    connection.queries_log.clear()
    with CaptureQueriesContext(connection) as queries:
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        report = evaluate_all(now)
        if profiler is not None:
            profiler.disable()
        seconds = time.perf_counter() - t0
    if profiler is not None:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(30)
        stats.sort_stats("tottime").print_stats(25)  # where the Python time itself goes
        print_query_shapes(queries.captured_queries, seconds)
    states = Counter(AlertInstance.objects.values_list("state", flat=True))
    db = sum(float(q["time"]) for q in queries.captured_queries)
    return {
        "at": report.evaluated_at,
        "db": db,
        "seconds": seconds,
        "rules": report.rules,
        "queries": len(queries),
        "changes": len(report.changes),
        "notifications": len(report.notifications),
        "states": dict(sorted(states.items())),
    }


# Literals in logged SQL: quoted strings, numbers, and the lists and arrays they make.
_LITERAL = re.compile(r"'(?:[^']|'')*'|\b\d+(?:\.\d+)?\b")
_LIST = re.compile(r"\((?:\?, )*\?\)")
_ARRAY = re.compile(r"ARRAY\[(?:\?, )*\?\]")


def query_shape(sql: str) -> str:
    """The SQL with its literals as `?` (a list of them as one), so one statement's runs group."""
    sql = _LITERAL.sub("?", sql)
    return _ARRAY.sub("ARRAY[?...]", _LIST.sub("(?...)", sql))


def print_query_shapes(captured: list[dict], seconds: float, top: int = 12) -> None:
    """Where the round's database time went: the statements grouped by shape, by total time
    (the client's clock around each execute, so it includes the round trip)."""
    total: defaultdict[str, float] = defaultdict(float)
    runs: Counter[str] = Counter()
    for q in captured:
        shape = query_shape(q["sql"])
        total[shape] += float(q["time"])
        runs[shape] += 1
    db = sum(total.values())
    print(f"database time {db:.2f} s of the round's {seconds:.2f} s ({db / seconds:.0%}), "
          f"{len(captured)} statements, {len(total)} shapes; the top {top}:")  # fmt: skip
    for shape, s in sorted(total.items(), key=lambda kv: -kv[1])[:top]:
        print(f"  {s:7.2f} s {runs[shape]:5} runs  {shape[:220]}")


def _shard_worker(job: tuple) -> dict:
    """In a forked process: evaluate shard k of n at `now` (its own database connection)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from alerts.services import evaluate_all

    now, k, n = job
    connection.close()  # never the parent's socket: a new connection of this process's own
    with CaptureQueriesContext(connection) as queries:
        t0 = time.perf_counter()
        report = evaluate_all(now, shard=(k, n))
        seconds = time.perf_counter() - t0
    connection.close()
    return {
        "k": k, "seconds": seconds, "rules": report.rules, "queries": len(queries),
        "changes": len(report.changes), "notifications": len(report.notifications),
    }  # fmt: skip


def evaluate_round_workers(now: datetime, workers: int) -> dict:
    """One round shared by `workers` forked processes, one shard each, at the same time."""
    import multiprocessing

    from django.db import connections

    from alerts.models import AlertInstance

    connections.close_all()  # forked children must not share the parent's connection
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        parts = pool.map(_shard_worker, [(now, k, workers) for k in range(workers)])
    wall = time.perf_counter() - t0
    states = Counter(AlertInstance.objects.values_list("state", flat=True))
    return {
        "at": now.replace(second=0, microsecond=0),
        "seconds": max(p["seconds"] for p in parts),
        "wall": wall,
        "workers": [p["seconds"] for p in parts],
        "rules": sum(p["rules"] for p in parts),
        "queries": max(p["queries"] for p in parts),
        "changes": sum(p["changes"] for p in parts),
        "notifications": sum(p["notifications"] for p in parts),
        "states": dict(sorted(states.items())),
    }


def time_reads(end: datetime, repeats: int) -> None:
    """The hour window of the cost and no-data rules (traffic, GPU sums, each host's last
    minute) for every service, read from minute rows only and from 5-minute rows, alternating;
    the median of each and their ratio. Isolates the lever from the rest of a round."""
    import statistics

    from alerts import sources
    from dossiers.models import Service

    ids = list(Service.objects.values_list("pk", flat=True))
    start = end - timedelta(hours=1)
    seconds: dict[str, list[float]] = {"minute rows": [], "5-minute rows": []}
    for _ in range(repeats):
        for label, resolutions in (("minute rows", (MINUTE_S,)), ("5-minute rows", None)):
            t0 = time.perf_counter()
            sources.service_windows(
                ids, start, end, metrics=[], gpu=True, last_seen=True, resolutions=resolutions
            )
            seconds[label].append(time.perf_counter() - t0)
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    print(
        f"hour-window read of {len(ids):,} services, {repeats} times each way, alternating: "
        + ", ".join(f"{k} median {v:.2f} s" for k, v in medians.items())
        + f"; 5-minute / minute rows = {medians['5-minute rows'] / medians['minute rows']:.3f}"
        f" | load {load_average()}",
        flush=True,
    )


def time_shared_reads(end: datetime, repeats: int) -> None:
    """The GPU rows of the 5- and 15-minute GPU rules' windows, each window's own query
    (`service_windows(gpu=True)` per window) against one query for both (`add_gpu`), in the
    same process, alternating; the median of each way and their ratio. Both ways read the
    windows' traffic too, as evaluation does."""
    import statistics

    from alerts import sources
    from dossiers.models import Service

    ids = list(Service.objects.values_list("pk", flat=True))
    lengths = (300, 900)

    def apart() -> None:
        for length in lengths:
            sources.service_windows(ids, end - timedelta(seconds=length), end, metrics=[])

    def together() -> None:
        windows = {
            length: sources.service_windows(
                ids, end - timedelta(seconds=length), end, metrics=[], gpu=False
            )
            for length in lengths
        }
        sources.add_gpu(windows, end)

    seconds: dict[str, list[float]] = {"apart": [], "together": []}
    for _ in range(repeats):
        for label, read in (("apart", apart), ("together", together)):
            t0 = time.perf_counter()
            read()
            seconds[label].append(time.perf_counter() - t0)
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    print(
        f"5- and 15-minute windows with their GPU rows, {len(ids):,} services, {repeats} times"
        f" each way, alternating: apart median {medians['apart']:.2f} s, together"
        f" {medians['together']:.2f} s; together / apart = "
        f"{medians['together'] / medians['apart']:.3f} | load {load_average()}",
        flush=True,
    )


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--services", type=int, default=1000)
    parser.add_argument("--hosts", type=int, default=4, help="hosts per service")
    parser.add_argument("--gpus", type=int, default=4, help="GPUs per host")
    parser.add_argument("--teams", type=int, default=50)
    parser.add_argument("--breaching", type=float, default=0.1, help="share over the P99 SLO")
    parser.add_argument("--warmup", type=int, default=6, help="rounds before the timed ones")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds, one a minute")
    parser.add_argument("--profile", action="store_true", help="cProfile the timed rounds")
    parser.add_argument(
        "--compare",
        action="store_true",
        help="alternate timed rounds: minute rows only / 5-minute rows",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="timed rounds shared by this many processes, one shard each",
    )
    parser.add_argument(
        "--reads",
        type=int,
        default=0,
        help="before the rounds, time the hour window's read, and the GPU read of two "
        "windows, alone, this many times each way",
    )
    parser.add_argument(
        "--no-slo-burn",
        action="store_true",
        help="disable the SLO burn rules (the 9 rules of the issue-14 budget)",
    )
    parser.add_argument(
        "--compare-burn",
        action="store_true",
        help="alternate timed rounds: every default rule / without the SLO burn rules",
    )
    parser.add_argument(
        "--no-exact-counts",
        action="store_true",
        help="roll-up rows without the exact per-request SLO counts (rolled up before the SLO "
        "existed, or pushing no requests): SLO reads merge the sketches instead",
    )
    parser.add_argument(
        "--slo-hours",
        type=int,
        default=74,
        help="hours of hourly rows before the minutes (the 3-day SLO window)",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (the budget is about it).")
    if args.warmup < P99_FOR_MINUTES:
        print(f"note: with fewer than {P99_FOR_MINUTES} warm-up rounds, few alerts fire in time")

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    from alerts import sources
    from alerts.models import AlertInstance, Notification
    from alerts.services import align_to_minute, evaluation_lag, no_data_lookback
    from perfhub.celery import app

    # Sending is another worker's job: enqueue into Celery's in-memory broker, deliver nothing.
    app.conf.task_always_eager = False
    app.conf.broker_url = "memory://localhost/"

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    # Its own database, never the one the tests or the other benchmarks use.
    connection.settings_dict["TEST"]["NAME"] = f"bench_alerts_{old_name}".replace("/", "_")
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    try:
        # Evaluations at minute E_j, j = -warmup .. rounds-1; each reads up to an hour back
        # from E_j - lag, and its last closed minute is E_j - lag - 1 min.
        first_timed = align_to_minute(datetime.now(UTC))
        evals = [first_timed + timedelta(minutes=j) for j in range(-args.warmup, args.rounds)]
        lag, lookback = evaluation_lag(), max(no_data_lookback(), timedelta(hours=1))
        first_minute = evals[0] - lag - lookback
        last_minute = evals[-1] - lag - timedelta(minutes=1)
        count = int((last_minute - first_minute).total_seconds() // 60) + 1
        minutes = [first_minute + timedelta(minutes=m) for m in range(count)]
        # Group g of the breaching services first breaches in the last minute E_g reads, so
        # some go pending and some go firing in every round.
        breach_from = [e - lag - timedelta(minutes=1) for e in evals]
        # The far edges of the 6-hour and 3-day SLO windows: minute rows, as in production.
        edge_minutes = [
            evals[0] - lag - timedelta(seconds=far) + timedelta(minutes=m)
            for far in (6 * 3600, 3 * 86400) if args.slo_hours * 3600 >= far
            for m in range(len(evals) + 60)
        ]  # fmt: skip

        print(
            f"seeding {args.services:,} services x {args.hosts} hosts x {args.gpus} GPUs, "
            f"{count} minutes ...",
            flush=True,
        )
        t0 = time.perf_counter()
        sizes = seed(
            services=args.services, teams=args.teams, hosts=args.hosts, gpus=args.gpus,
            breaching=args.breaching, minutes=minutes, breach_from=breach_from,
            slo_hours=args.slo_hours, edge_minutes=edge_minutes,
            exact_counts=not args.no_exact_counts,
        )  # fmt: skip
        seed_s = time.perf_counter() - t0
        if args.no_slo_burn:
            from alerts.models import Rule

            off = Rule.objects.filter(kind="slo_burn").update(enabled=False)
            sizes["rules"] -= off
            print(f"  SLO burn rules disabled: {off:,}")
        print("  " + ", ".join(f"{v:,} {k}" for k, v in sizes.items()) + f" in {seed_s:.0f} s")

        if args.reads:
            time_reads(evals[args.warmup] - lag, args.reads)
            time_shared_reads(evals[args.warmup] - lag, args.reads)
        results = []
        default_resolutions = sources.WINDOW_RESOLUTIONS
        for j, when in enumerate(evals):
            timed = j >= args.warmup
            kind = "timed" if timed else "warm-up"
            sources.WINDOW_RESOLUTIONS = default_resolutions
            if args.compare and timed and (j - args.warmup) % 2 == 0:
                kind = "minute"  # the reference: every window from minute rows
                sources.WINDOW_RESOLUTIONS = (MINUTE_S,)
            if args.compare_burn and timed:
                from alerts.models import Rule

                burn_off = (j - args.warmup) % 2 == 1
                Rule.objects.filter(kind="slo_burn").update(enabled=not burn_off)
                kind = "no-burn" if burn_off else kind
            if timed and args.workers > 1:
                r = evaluate_round_workers(when + timedelta(seconds=7), args.workers)
            else:
                r = evaluate_round(when + timedelta(seconds=7), profile=args.profile and timed)
            results.append((kind, r))
            states = ", ".join(f"{k} {v}" for k, v in r["states"].items()) or "none"
            shared = ""
            if "workers" in r:
                each = ", ".join(f"{x:.2f}" for x in r["workers"])
                shared = f" (workers: {each} s; wall {r['wall']:.2f} s)"
            # The client's clock around each statement: PostgreSQL's work plus the round trip.
            db = f" ({r['db']:.2f} s in the database)" if "db" in r else ""
            print(
                f"{kind:>7} {r['at']:%H:%M}: {r['seconds']:6.2f} s{shared} | {r['rules']:,} "
                f"rules | {r['queries']} queries{db} | {r['changes']} state changes | "
                f"{r['notifications']} notifications planned | alerts: {states} | "
                f"load {load_average()}",
                flush=True,
            )
        sources.WINDOW_RESOLUTIONS = default_resolutions
        live = AlertInstance.objects.live().count()
        queued = Notification.objects.filter(status=Notification.Status.QUEUED).count()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    timed = [r for kind, r in results if kind == "timed"]
    reference = [r for kind, r in results if kind == "minute"]
    no_burn = [r for kind, r in results if kind == "no-burn"]
    print(f"{connection.vendor}: {sizes['rules']:,} rules over {args.services:,} services; "
          f"{live} live alerts at the end, {queued} notifications queued (none sent)")  # fmt: skip
    if timed:
        worst = max(r["seconds"] for r in timed)
        mean = sum(r["seconds"] for r in timed) / len(timed)
        print(f"timed rounds: mean {mean:.2f} s, worst {worst:.2f} s, "
              f"{max(r['queries'] for r in timed)} queries at most")  # fmt: skip
        print(f"ratio worst round / {INTERVAL_S:.0f} s interval = {worst / INTERVAL_S:.3f} "
              "(target <= 0.8; with --workers N each <= 1/N)")  # fmt: skip
        if args.workers > 1:
            print(f"  ({args.workers} workers, one shard each: the slowest worker's seconds; "
                  f"target <= {1 / args.workers:.2f} of the interval each)")  # fmt: skip
        print(f"load average at the end: {load_average()} (the machine's other work slows every "
              "figure)")  # fmt: skip
        print(f"per 1,000 services: mean {mean * 1000 / args.services:.2f} s, "
              f"worst {worst * 1000 / args.services:.2f} s")  # fmt: skip
    if no_burn:
        nb_worst = max(r["seconds"] for r in no_burn)
        nb_mean = sum(r["seconds"] for r in no_burn) / len(no_burn)
        print(
            f"without the SLO burn rules (alternate rounds, {no_burn[0]['rules']:,} rules): "
            f"mean {nb_mean:.2f} s, worst {nb_worst:.2f} s = {nb_worst / INTERVAL_S:.3f} of "
            f"the interval; per 1,000 services {nb_mean * 1000 / args.services:.2f} s"
        )
    if timed and reference:
        ref_mean = sum(r["seconds"] for r in reference) / len(reference)
        ref_worst = max(r["seconds"] for r in reference)
        print(f"reference (windows from minute rows only, alternate rounds): mean {ref_mean:.2f} "
              f"s, worst {ref_worst:.2f} s; 5-minute rows / minute rows, means: "
              f"{mean / ref_mean:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
