"""Alert budget (DESIGN.md section 8, issue 14): evaluating 10,000 services' rules fits in one
evaluation interval (60 s) on one worker, and the time is linear in services.

    DATABASE_URL=postgres://... .venv/bin/python bench/alerts.py [--services 1000] [--hosts 4]

Data: `--services` services (spread over `--teams` teams, each team with one webhook receiver
pointing at a closed loopback port), each with its default rules (`default_rule_specs`: three
P99 SLO rules, GPU waiting, SM gap, KV cache, cost vs baseline, no data, margin) and a current
baseline, served by `--hosts` hosts of its own with `--gpus` GPUs each. Every minute of the
hour the longest rule window and the no-data lookback read, plus the minutes evaluated, each
host has one 1-minute `ServiceRollup` row (traffic, tokens, scraped gauges, e2e/TTFT/TPOT
sketches) and one `GpuRollup` row per GPU, and each service one `ServiceMergedRollup` row (the
roll-up's merge of its hosts' rows, computed once per kind of row by collectors' own merge),
COPYed through `collectors.storage` a chunk of services at a time with pre-serialized sketch
blobs. Minute k uses one of three variants (e2e median, GPU-Util, KV cache, tokens), so every
window's figures, and so every rule's last value, move each minute as in production. A
`--breaching` share of services have an e2e P99 above their SLO from a staggered minute on,
so during the timed rounds some alerts go pending, some go firing and notifications are
planned. Everything goes into a throw-away test database (`bench_alerts_<name>`), dropped at
the end.

Timed: `alerts.services.evaluate_all(now)` for consecutive minutes, as the beat task calls it.
`--warmup` untimed-for-the-budget rounds first (the very first evaluation also records every
rule's initial health, once, and the P99 alerts need 5 minutes pending before they fire), then
`--rounds` timed rounds, each a new minute. Notification sending is left to other workers, as
in production with a broker: Celery is switched from eager to its in-memory broker, so the
evaluation pays for planning and enqueueing, never for HTTP. Prints the seeding size, per round
seconds, rules evaluated, queries (CaptureQueriesContext), alerts by state and notifications
planned, and the ratio of the slowest timed round to the 60 s interval (target <= 1.0), and
the seconds per 1,000 services (linear in services: the same at any size).
A measurement, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import socket
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

INTERVAL_S = 60.0  # the beat schedule of alerts.evaluate
REQUESTS_PER_MINUTE = 600  # per host: 10 req/s
OUTPUT_TOKENS = 300  # per request
PROMPT_TOKENS = 800
SLO_E2E_MS, SLO_TTFT_MS, SLO_TPOT_MS = 2000.0, 300.0, 40.0
GPU_HOUR_PRICE, PRICE_PER_MTOK = Decimal("10"), Decimal("5")
MINUTE_S = 60
P99_FOR_MINUTES = 5  # for_s of the default P99 rules: pending this long before firing

ROLLUP_FIELDS = (
    "service_id", "host_id", "resolution_s", "start", "requests", "errors", "prompt_tokens",
    "output_tokens", "request_seconds", "scraped_requests", "scraped_prompt_tokens",
    "scraped_generation_tokens", "scraped_seconds", "qps", "prompt_tps", "generation_tps",
    "gauge_samples", "running_mean", "waiting_mean", "kv_cache_mean",
    "e2e_count", "e2e_sum", "e2e_min", "e2e_max", "e2e_sketch",
    "ttft_count", "ttft_sum", "ttft_min", "ttft_max", "ttft_sketch",
    "tpot_count", "tpot_sum", "tpot_min", "tpot_max", "tpot_sketch",
    "queue_count",
)  # fmt: skip
GPU_FIELDS = (
    "host_id", "gpu_index", "resolution_s", "start", "samples", "name", "util_mean",
    "mem_util_mean", "sm_active_mean", "dram_active_mean", "power_mean", "mem_used_max",
    "mem_total_bytes", "temp_max",
)  # fmt: skip


def closed_port_url() -> str:
    """A loopback URL nobody listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/hook"


def sketch_columns(values) -> tuple:
    """(count, sum, min, max, blob) of one pre-serialized sketch, reused for every row."""
    from analysis import sketches

    sk = sketches.from_values(values)
    stats = sketches.summary(sk)
    return stats["count"], stats["sum"], stats["min"], stats["max"], sketches.dumps(sk)


VARIANTS = 3  # minute k uses variant k % 3, so every window's figures move a little each minute
SEED_CHUNK = 250  # services per COPY: bounded memory at 10,000 services


def _row_values(*, e2e, ttft, tpot, variant: int) -> tuple:
    """A minute row's values after (service_id, host_id, resolution_s, start)."""
    n = REQUESTS_PER_MINUTE
    output, prompt = n * (OUTPUT_TOKENS + variant), n * PROMPT_TOKENS
    kv = 0.58 + 0.02 * variant
    return (n, 0, prompt, output, 60.0, 0.0, 0.0, 0.0, 0.0, n / 60, prompt / 60, output / 60,
            4, 20.0, 0.5, kv, *e2e, *ttft, *tpot, 0)  # fmt: skip


def _gpu_values(variant: int) -> tuple:
    """A GPU minute row's values after (host_id, gpu_index, resolution_s, start)."""
    gb = 1024**3
    util = 0.88 + 0.02 * variant
    return (12, "NVIDIA H100 80GB", util, 0.6, 0.5, 0.6, 600.0, 60 * gb, 80 * gb, 65.0)


def _merged_templates(*, hosts: int, gpus: int, rows: dict) -> dict:
    """The service-merged minute row the roll-up writes for `hosts` identical host rows, per
    row kind: computed once by collectors' own merge, then copied for every service."""
    from collectors.distributions import Traffic
    from collectors.models import MINUTE, GpuRollup, ServiceMergedRollup, ServiceRollup
    from collectors.services.rollups.rows import merged_row

    fields = [
        f.attname for f in ServiceMergedRollup._meta.concrete_fields
        if f.attname not in ("id", "service_id", "start", "hosts")
    ]  # fmt: skip
    out = {}
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for key, (values, variant) in rows.items():
        by_host = {}
        for h in range(hosts):
            row = ServiceRollup(
                **dict(zip(ROLLUP_FIELDS, (0, h, MINUTE, t0, *values), strict=True))
            )
            by_host[h] = Traffic()
            by_host[h].add_row(row)
        gpu_rows = [
            GpuRollup(**dict(zip(GPU_FIELDS, (h, g, MINUTE, t0, *_gpu_values(variant)),
                                 strict=True)))
            for h in range(hosts) for g in range(gpus)
        ]  # fmt: skip
        merged = merged_row(0, MINUTE, t0, by_host, gpu_rows)
        out[key] = tuple(getattr(merged, f) for f in fields)
    return {"fields": ("service_id", "start", "hosts", *fields), "rows": out}


def seed(
    *, services: int, teams: int, hosts: int, gpus: int, breaching: float, minutes: list[datetime],
    breach_from: list[datetime],
) -> dict[str, int]:  # fmt: skip
    """Services, rules, receivers, baselines, hosts and their per-minute roll-ups (per host,
    per GPU and service-merged, as the roll-up writes them); row counts.

    Breaching service k (every 1/breaching-th) has its e2e over SLO from
    `breach_from[k % len(breach_from)]` on. Rows are COPYed a chunk of services at a time.
    """
    import numpy as np
    from django.db import connection, transaction

    from alerts.models import Receiver, Rule
    from alerts.services import default_rule_specs
    from collectors import storage
    from collectors.models import GpuRollup, Host, ServiceMergedRollup, ServiceRollup
    from dossiers.models import Baseline, Service, Team

    rng = np.random.default_rng(11)
    n = REQUESTS_PER_MINUTE
    healthy_e2e = [
        sketch_columns(rng.lognormal(np.log(780 + 20 * v), 0.3, n)) for v in range(VARIANTS)
    ]  # P99 ~ 1.6 s
    breach_e2e = sketch_columns(rng.lognormal(np.log(2600), 0.3, n))  # P99 ~ 5 s
    ttft = sketch_columns(rng.lognormal(np.log(120), 0.3, n))  # P99 ~ 240 ms
    tpot = sketch_columns(rng.lognormal(np.log(20), 0.2, n))  # P99 ~ 32 ms
    kinds = {}
    for v in range(VARIANTS):
        kinds[("ok", v)] = (_row_values(e2e=healthy_e2e[v], ttft=ttft, tpot=tpot, variant=v), v)
        kinds[("breach", v)] = (_row_values(e2e=breach_e2e, ttft=ttft, tpot=tpot, variant=v), v)
    merged = _merged_templates(hosts=hosts, gpus=gpus, rows=kinds)

    url = closed_port_url()
    with transaction.atomic():
        team_objs = Team.objects.bulk_create(
            [Team(slug=f"bench-team-{t}", name=f"Bench team {t}") for t in range(teams)]
        )
        Receiver.objects.bulk_create(
            [
                Receiver(team=t, name="oncall", kind="webhook", url=url,
                         repeat_interval_s=4 * 3600)
                for t in team_objs
            ]
        )  # fmt: skip
        service_objs = Service.objects.bulk_create(
            [
                Service(
                    slug=f"bench-svc-{k}", name=f"Bench service {k}", team=team_objs[k % teams],
                    model_name="Llama-3-8B", model_params_b=Decimal("8"),
                    engine="vllm", gpu_model="NVIDIA H100 80GB",
                    gpus_per_replica=gpus, replicas=hosts, slo_p99_e2e_ms=SLO_E2E_MS,
                    slo_p99_ttft_ms=SLO_TTFT_MS, slo_p99_tpot_ms=SLO_TPOT_MS,
                    gpu_hour_price=GPU_HOUR_PRICE, price_per_mtok=PRICE_PER_MTOK,
                )
                for k in range(services)
            ],
            batch_size=500,
        )  # fmt: skip
        # The default rules (`ensure_default_rules`'s), in one bulk insert.
        Rule.objects.bulk_create(
            [
                Rule(service=s, is_default=True, **spec)
                for s in service_objs
                for spec in default_rule_specs(s)
            ],
            batch_size=2000,
        )
        per_replica_tps = REQUESTS_PER_MINUTE * OUTPUT_TOKENS / 60
        Baseline.objects.bulk_create(
            [
                Baseline(service=s, label="bench", measured_at=minutes[0], is_current=True,
                         output_tps=per_replica_tps, input_tps=per_replica_tps * 8 / 3)
                for s in service_objs
            ],
            batch_size=500,
        )  # fmt: skip
        host_objs = Host.objects.bulk_create(
            [Host(name=f"{s.slug}-gpu-{h}") for s in service_objs for h in range(hosts)],
            batch_size=1000,
        )

    every = round(1 / breaching) if breaching > 0 else 0
    breach_start: dict[int, datetime] = {}
    for k, service in enumerate(service_objs):
        if every and k % every == 0:
            breach_start[service.pk] = breach_from[(k // every) % len(breach_from)]

    variant_of = {start: int(start.timestamp()) // 60 % VARIANTS for start in minutes}
    gpu_values = [_gpu_values(v) for v in range(VARIANTS)]
    counts = {"rollup": 0, "gpu": 0, "merged": 0}
    for first in range(0, services, SEED_CHUNK):
        rollup_rows, gpu_rows, merged_rows = [], [], []
        for k in range(first, min(first + SEED_CHUNK, services)):
            service = service_objs[k]
            mine = host_objs[k * hosts : (k + 1) * hosts]
            host_ids = [h.pk for h in mine]
            starts_breaching = breach_start.get(service.pk)
            for start in minutes:
                v = variant_of[start]
                breached = starts_breaching is not None and start >= starts_breaching
                key = ("breach" if breached else "ok", v)
                values = kinds[key][0]
                for host in mine:
                    rollup_rows.append((service.pk, host.pk, MINUTE_S, start, *values))
                    for g in range(gpus):
                        gpu_rows.append((host.pk, g, MINUTE_S, start, *gpu_values[v]))
                merged_rows.append((service.pk, start, host_ids, *merged["rows"][key]))
        with transaction.atomic():
            storage.bulk_insert(ServiceRollup, ROLLUP_FIELDS, rollup_rows)
            storage.bulk_insert(GpuRollup, GPU_FIELDS, gpu_rows)
            storage.bulk_insert(ServiceMergedRollup, merged["fields"], merged_rows)
        counts["rollup"] += len(rollup_rows)
        counts["gpu"] += len(gpu_rows)
        counts["merged"] += len(merged_rows)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return {
        "teams": teams,
        "services": services,
        "breaching": len(breach_start),
        "rules": Rule.objects.count(),
        "hosts": len(host_objs),
        "service roll-ups": counts["rollup"],
        "GPU roll-ups": counts["gpu"],
        "service-merged roll-ups": counts["merged"],
        "minutes": len(minutes),
    }


def evaluate_round(now: datetime, profile: bool = False) -> dict:
    """One timed evaluation at `now`; its seconds, queries and what it did. `profile`
    prints where its time went (cProfile, cumulative, top 30)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from alerts.models import AlertInstance
    from alerts.services import evaluate_all

    profiler = cProfile.Profile() if profile else None
    with CaptureQueriesContext(connection) as queries:
        t0 = time.perf_counter()
        if profiler is not None:
            profiler.enable()
        report = evaluate_all(now)
        if profiler is not None:
            profiler.disable()
        seconds = time.perf_counter() - t0
    if profiler is not None:
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
    states = Counter(AlertInstance.objects.values_list("state", flat=True))
    return {
        "at": report.evaluated_at,
        "seconds": seconds,
        "rules": report.rules,
        "queries": len(queries),
        "changes": len(report.changes),
        "notifications": len(report.notifications),
        "states": dict(sorted(states.items())),
    }


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
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (the budget is about it).")
    if args.warmup < P99_FOR_MINUTES:
        print(f"note: with fewer than {P99_FOR_MINUTES} warm-up rounds, few alerts fire in time")

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

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

        print(
            f"seeding {args.services:,} services x {args.hosts} hosts x {args.gpus} GPUs, "
            f"{count} minutes ...",
            flush=True,
        )
        t0 = time.perf_counter()
        sizes = seed(
            services=args.services, teams=args.teams, hosts=args.hosts, gpus=args.gpus,
            breaching=args.breaching, minutes=minutes, breach_from=breach_from,
        )  # fmt: skip
        seed_s = time.perf_counter() - t0
        print("  " + ", ".join(f"{v:,} {k}" for k, v in sizes.items()) + f" in {seed_s:.0f} s")

        results = []
        for j, when in enumerate(evals):
            kind = "warm-up" if j < args.warmup else "timed"
            timed = j >= args.warmup
            r = evaluate_round(when + timedelta(seconds=7), profile=args.profile and timed)
            results.append((kind, r))
            states = ", ".join(f"{k} {v}" for k, v in r["states"].items()) or "none"
            print(
                f"{kind:>7} {r['at']:%H:%M}: {r['seconds']:6.2f} s | {r['rules']:,} rules | "
                f"{r['queries']} queries | {r['changes']} state changes | "
                f"{r['notifications']} notifications planned | alerts: {states}",
                flush=True,
            )
        live = AlertInstance.objects.live().count()
        queued = Notification.objects.filter(status=Notification.Status.QUEUED).count()
    finally:
        connection.creation.destroy_test_db(old_name, verbosity=0)

    timed = [r for kind, r in results if kind == "timed"]
    print(f"{connection.vendor}: {sizes['rules']:,} rules over {args.services:,} services; "
          f"{live} live alerts at the end, {queued} notifications queued (none sent)")  # fmt: skip
    if timed:
        worst = max(r["seconds"] for r in timed)
        mean = sum(r["seconds"] for r in timed) / len(timed)
        print(f"timed rounds: mean {mean:.2f} s, worst {worst:.2f} s, "
              f"{max(r['queries'] for r in timed)} queries at most")  # fmt: skip
        print(f"ratio worst round / {INTERVAL_S:.0f} s interval = {worst / INTERVAL_S:.3f} "
              "(target <= 1.0)")  # fmt: skip
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average at the end: {load} (the machine's other work slows every figure)")
        print(f"per 1,000 services: mean {mean * 1000 / args.services:.2f} s, "
              f"worst {worst * 1000 / args.services:.2f} s")  # fmt: skip


if __name__ == "__main__":
    main()
