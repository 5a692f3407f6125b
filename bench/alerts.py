"""Alert budget (DESIGN.md section 8, issue 14): evaluating 10,000 services' rules fits in one
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

`--compare`: timed rounds alternate between reading windows from minute rows only (what
evaluation did before issue 26: `alerts.sources.WINDOW_RESOLUTIONS = (MINUTE,)`, the
same-process reference) and the default (5-minute rows inside a window), and the ratio of
their means is printed. `--workers N`: each timed round forks N processes that evaluate one
shard each (`evaluate_all(shard=(k, N))`, what the `alerts.evaluate_shard` tasks do) at the
same time, and prints each worker's seconds and the slowest one over the interval.
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
    "queue_count", "slo_good",
)  # fmt: skip
GPU_FIELDS = (
    "host_id", "gpu_index", "resolution_s", "start", "samples", "name", "util_mean",
    "mem_util_mean", "sm_active_mean", "dram_active_mean", "power_mean", "mem_used_max",
    "mem_total_bytes", "temp_max",
)  # fmt: skip


ROLLUP_DEFAULTS: tuple = ()  # the model's other NOT NULL columns, with their defaults
GPU_DEFAULTS: tuple = ()


def _complete_fields() -> None:
    """Add every NOT NULL column the field lists leave out (new ones since they were written)
    with its model default, so COPY never writes NULL into them."""
    global ROLLUP_FIELDS, GPU_FIELDS, ROLLUP_DEFAULTS, GPU_DEFAULTS
    from collectors.models import GpuRollup, ServiceRollup

    for model, name in ((ServiceRollup, "ROLLUP"), (GpuRollup, "GPU")):
        fields = globals()[f"{name}_FIELDS"]
        extra = [
            f for f in model._meta.concrete_fields
            if f.attname not in fields and not f.primary_key and not f.null
        ]  # fmt: skip
        globals()[f"{name}_FIELDS"] = (*fields, *(f.attname for f in extra))
        globals()[f"{name}_DEFAULTS"] = tuple(f.get_default() for f in extra)


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


def _row_values(*, e2e, ttft, tpot, variant: int, slo_good: dict) -> tuple:
    """A minute row's values after (service_id, host_id, resolution_s, start)."""
    n = REQUESTS_PER_MINUTE
    output, prompt = n * (OUTPUT_TOKENS + variant), n * PROMPT_TOKENS
    kv = 0.58 + 0.02 * variant
    return (n, 0, prompt, output, 60.0, 0.0, 0.0, 0.0, 0.0, n / 60, prompt / 60, output / 60,
            4, 20.0, 0.5, kv, *e2e, *ttft, *tpot, 0, slo_good, *ROLLUP_DEFAULTS)  # fmt: skip


def _slo_good(e2e, ttft, tpot, exact: bool) -> dict:
    """The exact joint count the roll-up keeps per SLO key for these pushed requests (the
    services' implied SLO), or none (`exact` False: rows rolled up before the SLO existed)."""
    from analysis import slo

    if not exact:
        return {}
    thresholds = {"ttft": SLO_TTFT_MS, "tpot": SLO_TPOT_MS, "e2e": SLO_E2E_MS}
    keys = {slo.objective_key(thresholds): thresholds}
    return slo.judge_requests(zip(ttft, tpot, e2e, strict=True), ("ttft", "tpot", "e2e"), keys)


def _gpu_values(variant: int) -> tuple:
    """A GPU minute row's values after (host_id, gpu_index, resolution_s, start)."""
    gb = 1024**3
    util = 0.88 + 0.02 * variant
    return (12, "NVIDIA H100 80GB", util, 0.6, 0.5, 0.6, 600.0, 60 * gb, 80 * gb, 65.0,
            *GPU_DEFAULTS)  # fmt: skip


def _period_templates(*, hosts: int, gpus: int, kinds: dict, fields: tuple):
    """A function (minute keys of one period, resolution) -> (per-host row values, per-GPU
    row values, service-merged row values) of the period, each computed once by collectors'
    own merges of the minute rows, as the roll-up writes them."""
    from collectors.distributions import Traffic
    from collectors.models import GpuRollup, ServiceRollup
    from collectors.services.rollups.rows import merge_gpu_rows, merged_row, rollup_from_traffic

    cache: dict = {}
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def get(pattern: tuple, resolution: int) -> tuple:
        key = (pattern, resolution)
        if key not in cache:
            traffic = Traffic()
            for k in pattern:
                values = kinds[k][0]
                traffic.add_row(
                    ServiceRollup(
                        **dict(zip(ROLLUP_FIELDS, (0, 0, MINUTE_S, t0, *values), strict=True))
                    )
                )
            row = rollup_from_traffic(
                traffic, service_id=0, host_id=0, resolution=resolution, start=t0
            )
            host_values = tuple(getattr(row, f) for f in ROLLUP_FIELDS[4:])
            gpu = merge_gpu_rows(
                GpuRollup(**dict(zip(GPU_FIELDS, (0, 0, MINUTE_S, t0, *_gpu_values(kinds[k][1])),
                                     strict=True)))
                for k in pattern
            )  # fmt: skip
            gpu_values = tuple(
                gpu[f] if f in gpu else GpuRollup._meta.get_field(f).get_default()
                for f in GPU_FIELDS[4:]
            )
            by_host = {}
            for h in range(hosts):
                by_host[h] = Traffic()
                by_host[h].add_row(row)
            gpu_rows = [
                GpuRollup(host_id=h, gpu_index=g, resolution_s=resolution, start=t0, **gpu)
                for h in range(hosts) for g in range(gpus)
            ]  # fmt: skip
            merged = merged_row(0, resolution, t0, by_host, gpu_rows)
            cache[key] = (host_values, gpu_values, tuple(getattr(merged, f) for f in fields[3:]))
        return cache[key]

    return get


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
    breach_from: list[datetime], slo_hours: int = 0, edge_minutes: list[datetime] = (),
    exact_counts: bool = True,
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

    _complete_fields()
    rng = np.random.default_rng(11)
    n = REQUESTS_PER_MINUTE
    healthy = [rng.lognormal(np.log(780 + 20 * v), 0.3, n) for v in range(VARIANTS)]  # P99 1.6 s
    breach = rng.lognormal(np.log(2600), 0.3, n)  # P99 ~ 5 s
    ttft_ms = rng.lognormal(np.log(120), 0.3, n)  # P99 ~ 240 ms
    tpot_ms = rng.lognormal(np.log(20), 0.2, n)  # P99 ~ 32 ms
    ttft, tpot = sketch_columns(ttft_ms), sketch_columns(tpot_ms)
    kinds = {}
    for v in range(VARIANTS):
        for name, e2e in (("ok", healthy[v]), ("breach", breach)):
            good = _slo_good(e2e, ttft_ms, tpot_ms, exact_counts)
            values = _row_values(
                e2e=sketch_columns(e2e), ttft=ttft, tpot=tpot, variant=v, slo_good=good
            )
            kinds[(name, v)] = (values, v)
    merged = _merged_templates(hosts=hosts, gpus=gpus, rows=kinds)
    period = _period_templates(hosts=hosts, gpus=gpus, kinds=kinds, fields=merged["fields"])

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

    def variant(start: datetime) -> int:
        return int(start.timestamp()) // 60 % VARIANTS

    gpu_values = [_gpu_values(v) for v in range(VARIANTS)]
    # Whole 5-minute periods and hours inside the minutes (what the roll-up writes beside
    # them), the hours before them for the SLO windows, and the minutes at those windows'
    # far edges.
    first_minute, end_minute = minutes[0], minutes[-1] + timedelta(minutes=1)
    periods = []
    for resolution in (300, 3600):
        p = first_minute + timedelta(seconds=-int(first_minute.timestamp()) % resolution)
        while p + timedelta(seconds=resolution) <= end_minute:
            periods.append((resolution, p))
            p += timedelta(seconds=resolution)
    first_hour = first_minute - timedelta(seconds=int(first_minute.timestamp()) % 3600)
    history = [first_hour - timedelta(hours=h) for h in range(slo_hours, 0, -1)]
    if first_hour < first_minute and slo_hours:
        history.append(first_hour)  # the hour the minutes start in, as a whole hour of data
    in_range = set(minutes)
    edges = sorted(m for m in set(edge_minutes) if m not in in_range)
    counts = {"rollup": 0, "gpu": 0, "merged": 0, "5-minute and hourly": 0, "SLO history": 0}
    for first in range(0, services, SEED_CHUNK):
        rollup_rows, gpu_rows, merged_rows = [], [], []
        for k in range(first, min(first + SEED_CHUNK, services)):
            service = service_objs[k]
            mine = host_objs[k * hosts : (k + 1) * hosts]
            host_ids = [h.pk for h in mine]
            starts_breaching = breach_start.get(service.pk)

            def key_of(start: datetime, breaching=starts_breaching) -> tuple:
                breached = breaching is not None and start >= breaching
                return ("breach" if breached else "ok", variant(start))

            for start in minutes:
                v = variant(start)
                key = key_of(start)
                values = kinds[key][0]
                for host in mine:
                    rollup_rows.append((service.pk, host.pk, MINUTE_S, start, *values))
                    for g in range(gpus):
                        gpu_rows.append((host.pk, g, MINUTE_S, start, *gpu_values[v]))
                merged_rows.append((service.pk, start, host_ids, *merged["rows"][key]))
            for resolution, start in periods:
                pattern = tuple(
                    key_of(start + timedelta(minutes=m)) for m in range(resolution // 60)
                )
                host_values, one_gpu, merged_values = period(pattern, resolution)
                for host in mine:
                    rollup_rows.append((service.pk, host.pk, resolution, start, *host_values))
                    for g in range(gpus):
                        gpu_rows.append((host.pk, g, resolution, start, *one_gpu))
                merged_rows.append((service.pk, start, host_ids, *merged_values))
                counts["5-minute and hourly"] += len(mine) + 1
            for start in history:
                pattern = tuple(("ok", variant(start + timedelta(minutes=m))) for m in range(60))
                host_values, _, merged_values = period(pattern, 3600)
                for host in mine:
                    rollup_rows.append((service.pk, host.pk, 3600, start, *host_values))
                merged_rows.append((service.pk, start, host_ids, *merged_values))
                counts["SLO history"] += len(mine) + 1
            for start in edges:
                key = ("ok", variant(start))
                for host in mine:
                    rollup_rows.append((service.pk, host.pk, MINUTE_S, start, *kinds[key][0]))
                merged_rows.append((service.pk, start, host_ids, *merged["rows"][key]))
                counts["SLO history"] += len(mine) + 1
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
    return {"k": k, "seconds": seconds, "rules": report.rules, "queries": len(queries)}


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
        "changes": 0,
        "notifications": 0,
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
        help="before the rounds, time the hour window's read alone this many times each way",
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
            print(
                f"{kind:>7} {r['at']:%H:%M}: {r['seconds']:6.2f} s{shared} | {r['rules']:,} "
                f"rules | {r['queries']} queries | {r['changes']} state changes | "
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
