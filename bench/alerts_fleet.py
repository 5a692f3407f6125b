"""The synthetic fleet `bench/alerts.py` evaluates: teams, receivers, services with their
default rules and baselines, hosts, and their roll-up rows (per-minute, 5-minute, hourly and
SLO-history; per host, per GPU and service-merged), COPYed a chunk of services at a time.
The data it writes is described in `bench/alerts.py`'s docstring; seeding is not timed.
"""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta
from decimal import Decimal

REQUESTS_PER_MINUTE = 600  # per host: 10 req/s
OUTPUT_TOKENS = 300  # per request
PROMPT_TOKENS = 800
SLO_E2E_MS, SLO_TTFT_MS, SLO_TPOT_MS = 2000.0, 300.0, 40.0
GPU_HOUR_PRICE, PRICE_PER_MTOK = Decimal("10"), Decimal("5")
MINUTE_S = 60

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
