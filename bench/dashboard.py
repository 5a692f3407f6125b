"""Dashboard budget (docs/measurements.md): a service dashboard over 30 days, from roll-ups vs
from raw samples.

    DATABASE_URL=postgres://... .venv/bin/python bench/dashboard.py [--days 30] [--keepdb]

Data: one service on 2 hosts x 4 GPUs (8 GPUs); every minute of the range, `--requests`
pushed requests per host (e2e, TTFT, TPOT, tokens) and `--gpu-samples` NVML samples per GPU.
Raw rows are COPYed; the minute roll-ups are built from the very same values (one DDSketch
per host, minute and metric) and the hourly roll-ups merged from those, as the roll-up task
does. Everything goes into a throw-away test database (`bench_<name>`; `--keepdb` keeps it and
skips seeding next time).

Timed, best of `--rounds`, each ending in the JSON the browser gets:
- roll-ups: `dashboards.selectors.service_dashboard` (30 days -> hourly rows) + every figure;
- raw: the same series computed from the raw rows (per hour: exact percentiles with numpy,
  rates, GPU means), fed to the same figure code.
Prints both, the ratio (target >= 20x), and the rows each path read. A measurement, not a
test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

HOSTS = ("bench-gpu-a", "bench-gpu-b")
GPUS_PER_HOST = 4
SLUG = "bench-dashboard"
RANGES = (
    ("1h", timedelta(hours=1)),
    ("24h", timedelta(hours=24)),
    ("7d", timedelta(days=7)),
    ("30d", timedelta(days=30)),
)


def seed(*, days: int, requests: int, gpu_samples: int, end: datetime) -> None:
    import numpy as np
    from django.db import transaction

    from analysis import sketches
    from collectors import storage
    from collectors.models import (
        HOUR,
        MINUTE,
        GpuRollup,
        GpuSample,
        Host,
        RequestSample,
        ServiceRollup,
    )
    from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS
    from dossiers.models import Service, Team

    team = Team.objects.create(slug="bench", name="Bench")
    service = Service.objects.create(
        slug=SLUG, name="Bench dashboard", team=team, model_name="Llama-3-8B",
        model_params_b=8, engine="vllm", gpu_model="NVIDIA H100 80GB", gpus_per_replica=4,
        replicas=2, slo_p99_e2e_ms=2000, slo_p99_ttft_ms=500, slo_p99_tpot_ms=50,
        gpu_hour_price=10, price_per_mtok=5,
    )  # fmt: skip
    rng = np.random.default_rng(7)
    start = end - timedelta(days=days)
    gb = 1024**3
    for h, name in enumerate(HOSTS):
        host = Host.objects.create(name=name)
        t0 = time.perf_counter()
        for day in range(days):
            raw_requests, raw_gpus, service_rows, gpu_rows = [], [], [], []
            hour_sketches: dict[int, dict[str, list]] = defaultdict(lambda: defaultdict(list))
            for m in range(day * 1440, (day + 1) * 1440):
                minute = start + timedelta(minutes=m)
                e2e = rng.lognormal(6.8 + 0.1 * h, 0.45, requests)
                ttft = rng.lognormal(5.0, 0.5, requests)
                tpot = rng.lognormal(3.0, 0.3, requests)
                out = rng.integers(50, 400, requests)
                prompt = rng.integers(100, 1500, requests)
                offsets = np.sort(rng.uniform(0, 60, requests))
                for i in range(requests):
                    raw_requests.append(
                        (service.pk, host.pk, minute + timedelta(seconds=float(offsets[i])),
                         float(ttft[i]), float(tpot[i]), float(e2e[i]), None,
                         int(prompt[i]), int(out[i]), True)
                    )  # fmt: skip
                row = ServiceRollup(
                    service=service, host=host, resolution_s=MINUTE, start=minute,
                    requests=requests, prompt_tokens=int(prompt.sum()),
                    output_tokens=int(out.sum()), request_seconds=60.0,
                    qps=requests / 60, prompt_tps=float(prompt.sum()) / 60,
                    generation_tps=float(out.sum()) / 60,
                )  # fmt: skip
                for metric, values in (("e2e", e2e), ("ttft", ttft), ("tpot", tpot)):
                    sk = sketches.from_values(values)
                    hour_sketches[m // 60][metric].append(sk)
                    set_sketch(row, metric, sk, sketches)
                service_rows.append(row)
                for g in range(GPUS_PER_HOST):
                    util = rng.uniform(0.85, 1.0, gpu_samples)
                    sm = util * rng.uniform(0.3, 0.5, gpu_samples)
                    dram = rng.uniform(0.5, 0.8, gpu_samples)
                    for s in range(gpu_samples):
                        raw_gpus.append(
                            (host.pk, minute + timedelta(seconds=60 * s / gpu_samples), g, "",
                             "NVIDIA H100 80GB", float(util[s]), 0.6, 60 * gb, 80 * gb, 600.0,
                             60.0, 1980.0, float(sm[s]), None, float(dram[s]))
                        )  # fmt: skip
                    gpu_rows.append(
                        GpuRollup(
                            host=host, gpu_index=g, resolution_s=MINUTE, start=minute,
                            samples=gpu_samples, name="NVIDIA H100 80GB",
                            util_mean=float(util.mean()), mem_util_mean=0.6,
                            sm_active_mean=float(sm.mean()), dram_active_mean=float(dram.mean()),
                            power_mean=600.0, mem_used_max=60 * gb, mem_total_bytes=80 * gb,
                            temp_max=60.0,
                        )
                    )  # fmt: skip
            for hour, by_metric in hour_sketches.items():
                hs = start + timedelta(hours=hour)
                minute_rows = service_rows[(hour - day * 24) * 60 : (hour - day * 24 + 1) * 60]
                row = ServiceRollup(
                    service=service, host=host, resolution_s=HOUR, start=hs,
                    requests=sum(r.requests for r in minute_rows),
                    prompt_tokens=sum(r.prompt_tokens for r in minute_rows),
                    output_tokens=sum(r.output_tokens for r in minute_rows),
                    request_seconds=60.0 * len(minute_rows),
                )  # fmt: skip
                row.qps = row.requests / row.request_seconds
                row.prompt_tps = row.prompt_tokens / row.request_seconds
                row.generation_tps = row.output_tokens / row.request_seconds
                for metric, items in by_metric.items():
                    set_sketch(row, metric, sketches.merge(items), sketches)
                service_rows.append(row)
                for g in range(GPUS_PER_HOST):
                    mins = [r for r in gpu_rows if r.gpu_index == g and r.start >= hs
                            and r.start < hs + timedelta(hours=1)]  # fmt: skip
                    gpu_rows.append(
                        GpuRollup(
                            host=host, gpu_index=g, resolution_s=HOUR, start=hs,
                            samples=sum(r.samples for r in mins), name="NVIDIA H100 80GB",
                            util_mean=sum(r.util_mean for r in mins) / len(mins),
                            mem_util_mean=0.6,
                            sm_active_mean=sum(r.sm_active_mean for r in mins) / len(mins),
                            dram_active_mean=sum(r.dram_active_mean for r in mins) / len(mins),
                            power_mean=600.0, mem_used_max=60 * gb, mem_total_bytes=80 * gb,
                            temp_max=60.0,
                        )
                    )  # fmt: skip
            with transaction.atomic():
                storage.bulk_insert(RequestSample, REQUEST_FIELDS, raw_requests)
                storage.bulk_insert(GpuSample, GPU_FIELDS, raw_gpus)
                storage.insert_instances(ServiceRollup, service_rows)
                storage.insert_instances(GpuRollup, gpu_rows)
        print(f"  seeded {name}: {days} days in {time.perf_counter() - t0:.0f} s", flush=True)
    from django.db import connection

    from collectors.services.rollups import rebuild_derived_rollups

    # The 5-minute and service-merged rows the roll-up writes beside the minute and hour rows.
    t0 = time.perf_counter()
    written = rebuild_derived_rollups(start=start, end=end)
    print(f"  derived rows {written} in {time.perf_counter() - t0:.0f} s", flush=True)
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")


def set_sketch(row, metric: str, sk, sketches) -> None:
    stats = sketches.summary(sk)
    setattr(row, f"{metric}_sketch", sketches.dumps(sk))
    setattr(row, f"{metric}_count", stats["count"])
    setattr(row, f"{metric}_sum", stats["sum"])
    setattr(row, f"{metric}_min", stats["min"])
    setattr(row, f"{metric}_max", stats["max"])


def from_rollups(service, start: datetime, end: datetime) -> tuple[str, int]:
    from dashboards.figures.common import panels_json
    from dashboards.figures.service import service_panels
    from dashboards.selectors import service_dashboard

    d = service_dashboard(service=service, start=start, end=end)
    return panels_json(service_panels(d)), len(d.metrics.points)


def from_raw(service, start: datetime, end: datetime) -> tuple[str, int]:
    """The same dashboard computed from raw rows: hourly exact percentiles, rates, GPU means."""
    import numpy as np

    from analysis.percentiles import STANDARD_QUANTILES, Percentile
    from collectors.models import GpuSample, RequestSample
    from collectors.selectors import GpuPoint, MetricsPoint, ServiceMetrics
    from dashboards.figures.common import panels_json
    from dashboards.figures.service import service_panels
    from dashboards.selectors import ServiceDashboard, service_hosts
    from dashboards.timeline import time_markers
    from dossiers.selectors import current_baseline

    hour = 3600
    by_hour: dict[int, list[tuple]] = defaultdict(list)
    n = 0
    for ts, ttft, tpot, e2e, prompt, out in (
        RequestSample.objects.filter(service=service, ts__gte=start, ts__lt=end)
        .values_list("ts", "ttft_ms", "tpot_ms", "e2e_ms", "prompt_tokens", "output_tokens")
        .iterator(chunk_size=20000)
    ):
        by_hour[int(ts.timestamp()) // hour].append((ttft, tpot, e2e, prompt, out))
        n += 1
    points = []
    for key in sorted(by_hour):
        arr = np.array(by_hour[key], dtype=float)
        latency = {}
        for col, metric in ((2, "e2e"), (0, "ttft"), (1, "tpot")):
            values = np.quantile(arr[:, col], STANDARD_QUANTILES)
            latency[metric] = [
                Percentile(q=q, value=float(v), count=len(arr), method="exact")
                for q, v in zip(STANDARD_QUANTILES, values, strict=True)
            ]
        latency["queue"] = [Percentile(q=q, value=None, count=0) for q in STANDARD_QUANTILES]
        points.append(
            MetricsPoint(
                t=datetime.fromtimestamp(key * hour, tz=UTC), requests=len(arr),
                qps=len(arr) / hour, prompt_tps=arr[:, 3].sum() / hour,
                generation_tps=arr[:, 4].sum() / hour, running=None, waiting=None,
                kv_cache_usage=None, latency=latency,
            )
        )  # fmt: skip
    gpus: dict[tuple[int, str, int], list[tuple]] = defaultdict(list)
    for ts, host, index, util, sm, dram, used, total in (
        GpuSample.objects.filter(host__name__in=HOSTS, ts__gte=start, ts__lt=end)
        .values_list(
            "ts", "host__name", "gpu_index", "util", "sm_active", "dram_active",
            "mem_used_bytes", "mem_total_bytes",
        )
        .iterator(chunk_size=20000)
    ):  # fmt: skip
        gpus[(int(ts.timestamp()) // hour, host, index)].append((util, sm, dram, used, total))
        n += 1
    gpu_points = []
    for (key, host, index), items in sorted(gpus.items()):
        arr = np.array(items, dtype=float)
        gpu_points.append(
            GpuPoint(
                t=datetime.fromtimestamp(key * hour, tz=UTC), host=host, gpu_index=index,
                name="", util=float(arr[:, 0].mean()), sm_active=float(arr[:, 1].mean()),
                sm_occupancy=None, dram_active=float(arr[:, 2].mean()), mem_util=None,
                mem_used_bytes=int(arr[:, 3].max()), mem_total_bytes=int(arr[:, 4].max()),
                power_w=None,
            )
        )  # fmt: skip
    metrics = ServiceMetrics(
        service=service.slug, start=start, end=end, resolution_s=hour, hosts=list(HOSTS),
        points=points, overall={}, gpus=gpu_points,
    )  # fmt: skip
    d = ServiceDashboard(
        service=service, start=start, end=end, hosts=None,
        available_hosts=service_hosts(service=service, now=end), metrics=metrics,
        baseline=current_baseline(service), markers=time_markers(service=service, start=start,
                                                                 end=end),
    )  # fmt: skip
    return panels_json(service_panels(d)), n


def add_services(service, total: int) -> int:
    """Grow the database to `total` services, each with the bench service's 30 days of hourly
    per-host and service-merged rows (copied server-side, INSERT ... SELECT). Returns how many
    services were added."""
    from django.db import connection

    from collectors.models import HOUR, ServiceMergedRollup, ServiceRollup
    from dossiers.models import Service

    have = Service.objects.count()
    if have >= total:
        return 0
    template = {
        f.attname: getattr(service, f.attname)
        for f in Service._meta.concrete_fields
        if f.attname not in ("id", "slug", "name", "created_at", "updated_at")
    }
    new = Service.objects.bulk_create(
        [
            Service(**template, slug=f"bench-other-{k}", name=f"Bench other {k}")
            for k in range(have, total)
        ],
        batch_size=1000,
    )
    ids = [s.pk for s in new]
    with connection.cursor() as cursor:
        for model in (ServiceRollup, ServiceMergedRollup):
            cols = [
                f.column
                for f in model._meta.concrete_fields
                if f.attname not in ("id", "service_id")
            ]
            listed = ", ".join(cols)
            cursor.execute(
                f"INSERT INTO {model._meta.db_table} (service_id, {listed}) "
                f"SELECT s.id, {', '.join('r.' + c for c in cols)} "
                f"FROM {model._meta.db_table} r CROSS JOIN unnest(%s::bigint[]) AS s(id) "
                "WHERE r.service_id = %s AND r.resolution_s = %s",
                [ids, service.pk, HOUR],
            )
        cursor.execute("ANALYZE")
    return len(ids)


def page_queries(service, start: datetime, end: datetime) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        from_rollups(service, start, end)
    return len(ctx.captured_queries)


def bare_read(service, start: datetime, end: datetime) -> tuple[None, int]:
    """The page's own roll-up query (the same SQL), executed and fetched, nothing else."""
    from django.db import connection

    from collectors.selectors import _bucket, merged_points, resolution_for

    resolution = resolution_for(start, end)
    qs = merged_points(service, resolution, _bucket(start, resolution), end)
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return None, len(cursor.fetchall())


def best_of(rounds: int, fn, *args) -> tuple[float, int]:
    best, rows = float("inf"), 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        _, rows = fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--requests", type=int, default=20, help="requests per host-minute")
    parser.add_argument("--gpu-samples", type=int, default=4, help="samples per GPU-minute")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keepdb", action="store_true", help="keep (and reuse) the database")
    parser.add_argument(
        "--services",
        type=int,
        default=0,
        help="also time the 30 d page at 10 services and at this many (e.g. 2000)",
    )
    parser.add_argument(
        "--no-raw", dest="raw", action="store_false", help="skip the from-raw-rows comparison"
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection
    from django.test.utils import setup_test_environment

    from dossiers.models import Service

    setup_test_environment()
    old_name = connection.settings_dict["NAME"]
    # Its own database, never the one the tests use: bench_<name>.
    connection.settings_dict["TEST"]["NAME"] = f"bench_{old_name}".replace("/", "_")
    connection.creation.create_test_db(
        verbosity=0, autoclobber=True, serialize=False, keepdb=args.keepdb
    )
    try:
        service = Service.objects.filter(slug=SLUG).first()
        end = datetime.now(UTC).replace(second=0, microsecond=0)
        if service is None:
            print(f"seeding {args.days} days for {len(HOSTS) * GPUS_PER_HOST} GPUs ...")
            seed(days=args.days, requests=args.requests, gpu_samples=args.gpu_samples, end=end)
            service = Service.objects.get(slug=SLUG)
        else:
            from collectors.models import ServiceRollup

            end = ServiceRollup.objects.filter(service=service).latest("start").start
            end += timedelta(minutes=1)
            from collectors.models import ServiceMergedRollup
            from collectors.services.rollups import rebuild_derived_rollups

            if not ServiceMergedRollup.objects.exists():  # kept from before the merged rows
                print("rebuilding the merged rows ...", flush=True)
                rebuild_derived_rollups(
                    start=end - timedelta(days=args.days), end=end, five_minute=False
                )
        start = end - timedelta(days=args.days)
        ranges = []
        for label, span in RANGES:
            if span > timedelta(days=args.days):
                continue
            page_s, _ = best_of(args.rounds, from_rollups, service, end - span, end)
            bare_s, rows = best_of(args.rounds, bare_read, service, end - span, end)
            ranges.append((label, rows, page_s, bare_s))
        fleet = []
        if args.services:
            for total in (10, args.services):
                print(f"growing to {total:,} services ...", flush=True)
                add_services(service, total)
                page_s, _ = best_of(args.rounds, from_rollups, service, start, end)
                fleet.append((total, page_s, page_queries(service, start, end)))
        rollup_s, rollup_rows = best_of(args.rounds, from_rollups, service, start, end)
        raw_s, raw_rows = (
            best_of(args.rounds, from_raw, service, start, end) if args.raw else (0, 0)
        )
    finally:
        if not args.keepdb:
            connection.creation.destroy_test_db(old_name, verbosity=0)
    print(f"{connection.vendor}: {args.days} days, {len(HOSTS) * GPUS_PER_HOST} GPUs")
    print(f"{'range':>6} {'rows':>6} {'page ms':>9} {'bare ms':>8} {'page / bare':>12}")
    for label, rows, page_s, bare_s in ranges:
        print(
            f"{label:>6} {rows:>6} {page_s * 1000:9.1f} {bare_s * 1000:8.2f} "
            f"{page_s / bare_s:11.1f}x"
        )
    print("target: page / bare <= 5x at 30 d")
    for total, page_s, queries in fleet:
        print(f"30 d page with {total:>6,} services: {page_s * 1000:8.1f} ms, {queries} queries")
    if len(fleet) == 2:
        ratio = fleet[1][1] / fleet[0][1]
        print(f"ratio {fleet[1][0]:,} / {fleet[0][0]:,} services = {ratio:.2f}x (target <= 1.5x, "
              "same query count)")  # fmt: skip
    if args.raw:
        print(f"from roll-ups: {rollup_s * 1000:8.1f} ms  ({rollup_rows:,} points read)")
        print(f"from raw rows: {raw_s * 1000:8.1f} ms  ({raw_rows:,} raw rows read)")
        print(f"ratio raw / roll-ups = {raw_s / rollup_s:.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
