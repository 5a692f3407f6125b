"""Ingest budget (DESIGN.md section 8): samples/s through the real HTTP API vs a raw COPY.

    DATABASE_URL=postgres://... .venv/bin/python bench/ingest.py [--batches 40] [--rounds 3]

Server: gunicorn started by this script on 127.0.0.1 (sync workers, one per CPU), talking to
the PostgreSQL in DATABASE_URL; the client posts agent batches (DESIGN.md section 3) from as
many threads as there are workers, each with a keep-alive session. Baseline: the same rows
(request samples + GPU samples), already as tuples, COPYed by psycopg over one connection into
the same tables, one transaction per batch. Rounds alternate API and COPY (so background load
hits both); prints each round, the best rate of each, and their ratio (target >= 0.5).
A measurement, not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARM_UP = 6  # batches posted before timing (spread over the workers)
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_batches(n: int, per_batch: int, host: str, service: str, gpus: int) -> list[dict]:
    import numpy as np

    rng = np.random.default_rng(1)
    start = datetime.now(UTC) - timedelta(minutes=30)
    batches = []
    for b in range(n):
        ts0 = start + timedelta(seconds=10 * b)
        e2e = rng.lognormal(7.0, 0.5, per_batch)
        stamp = ts0.isoformat()
        batches.append(
            {
                "batch_id": str(uuid.uuid4()),
                "host": host,
                "agent_version": "bench",
                "sent_at": stamp,
                "gpus": [
                    {
                        "ts": stamp,
                        "index": i,
                        "uuid": f"GPU-{i}",
                        "name": "NVIDIA H100",
                        "util": 0.9,
                        "mem_util": 0.5,
                        "mem_used_bytes": 7 * 10**10,
                        "mem_total_bytes": 8 * 10**10,
                        "power_w": 600.0,
                        "temp_c": 60,
                        "sm_clock_mhz": 1980,
                        "sm_active": 0.4,
                        "sm_occupancy": None,
                        "dram_active": 0.7,
                    }
                    for i in range(gpus)
                ],
                "scrapes": [],
                "requests": [
                    {
                        "ts": (ts0 + timedelta(milliseconds=10 * i)).isoformat(),
                        "service": service,
                        "ttft_ms": float(v) / 10,
                        "tpot_ms": 20.0,
                        "e2e_ms": float(v),
                        "queue_ms": 3.0,
                        "prompt_tokens": 512,
                        "output_tokens": 128,
                        "ok": True,
                    }
                    for i, v in enumerate(e2e)
                ],
            }
        )
    return batches


def setup_fixtures(tag: str) -> tuple[str, str, str]:
    import django

    django.setup()
    from django.core.management import call_command

    from collectors.services.tokens import token_issue_for_host_name
    from dossiers.models import Service, Team

    call_command("migrate", verbosity=0)
    team, _ = Team.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    service, _ = Service.objects.get_or_create(
        slug=f"bench-{tag}",
        defaults=dict(
            name="Bench", team=team, model_name="m", model_params_b=7, engine="vllm",
            gpu_model="H100", gpu_hour_price=2,
        ),
    )  # fmt: skip
    _, token = token_issue_for_host_name(host_name=f"bench-host-{tag}")
    return service.slug, f"bench-host-{tag}", token


@contextmanager
def gunicorn(workers: int):
    """gunicorn serving PerfHub on a free loopback port; yields the ingest URL once it answers."""
    import requests

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable, "-m", "gunicorn", "perfhub.wsgi", "--bind", f"127.0.0.1:{port}",
            "--workers", str(workers), "--log-level", "warning",
        ],
        cwd=ROOT,
        env={**os.environ, "ALLOWED_HOSTS": "127.0.0.1", "PERFHUB_INGEST_MAX_BYTES": str(50 << 20)},
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/v1/ingest/"
    try:
        for _ in range(100):
            try:
                requests.get(url, timeout=5)  # 405/401 once the server answers
                break
            except requests.RequestException:
                time.sleep(0.1)
        yield url
    finally:
        server.terminate()
        server.wait(10)


def run_api(url: str, batches: list[dict], token: str, workers: int) -> tuple[float, int]:
    import requests

    bodies = [json.dumps(b) for b in batches]
    headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}

    def post_all(chunk: list[str]) -> int:
        session = requests.Session()
        stored = 0
        for body in chunk:
            response = session.post(url, data=body, headers=headers, timeout=60)
            if response.status_code != 202:
                raise SystemExit(f"ingest answered {response.status_code}: {response.text}")
            counts = response.json()["counts"]
            stored += counts["requests"] + counts["gpus"]
        return stored

    chunks = [bodies[i::workers] for i in range(workers)]
    started = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        stored = sum(pool.map(post_all, chunks))
    return time.perf_counter() - started, stored


def run_copy(batches: list[dict], host_id: int, service_id: int) -> tuple[float, int]:
    """The same rows, as tuples, COPYed straight into the same tables (one txn per batch)."""
    import psycopg
    from django.conf import settings

    from collectors.models import GpuSample, RequestSample
    from collectors.services.ingest import GPU_FIELDS, REQUEST_FIELDS

    db = settings.DATABASES["default"]
    conninfo = dict(
        dbname=db["NAME"], user=db["USER"], password=db["PASSWORD"] or None,
        host=db["HOST"], port=db["PORT"] or None,
    )  # fmt: skip

    def parse(ts: str) -> datetime:
        return datetime.fromisoformat(ts)

    prepared = []
    for b in batches:
        gpu_rows = [
            (host_id, parse(g["ts"]), g["index"], g["uuid"], g["name"], g["util"], g["mem_util"],
             g["mem_used_bytes"], g["mem_total_bytes"], g["power_w"], g["temp_c"],
             g["sm_clock_mhz"], g["sm_active"], g["sm_occupancy"], g["dram_active"])
            for g in b["gpus"]
        ]  # fmt: skip
        request_rows = [
            (service_id, host_id, parse(r["ts"]), r["ttft_ms"], r["tpot_ms"], r["e2e_ms"],
             r["queue_ms"], r["prompt_tokens"], r["output_tokens"], r["ok"])
            for r in b["requests"]
        ]  # fmt: skip
        prepared.append((gpu_rows, request_rows))

    def copy_sql(model, fields) -> str:
        columns = ", ".join(model._meta.get_field(f.removesuffix("_id")).column for f in fields)
        return f"COPY {model._meta.db_table} ({columns}) FROM STDIN"

    gpu_sql, request_sql = copy_sql(GpuSample, GPU_FIELDS), copy_sql(RequestSample, REQUEST_FIELDS)
    stored = 0
    with psycopg.connect(**{k: v for k, v in conninfo.items() if v}) as conn:
        started = time.perf_counter()
        for gpu_rows, request_rows in prepared:
            with conn.transaction(), conn.cursor() as cur:
                with cur.copy(gpu_sql) as copy:
                    for row in gpu_rows:
                        copy.write_row(row)
                with cur.copy(request_sql) as copy:
                    for row in request_rows:
                        copy.write_row(row)
            stored += len(gpu_rows) + len(request_rows)
        elapsed = time.perf_counter() - started
    return elapsed, stored


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=40, help="batches posted per round")
    parser.add_argument("--rounds", type=int, default=3, help="API then COPY, this many times")
    parser.add_argument("--requests", type=int, default=1000, help="request samples per batch")
    parser.add_argument("--gpus", type=int, default=8, help="GPU samples per batch")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        raise SystemExit("Set DATABASE_URL to a PostgreSQL database (the budget is about COPY).")

    tag = uuid.uuid4().hex[:8]
    service_slug, host_name, token = setup_fixtures(tag)
    from collectors.models import GpuSample, Host, IngestBatch, RequestSample
    from dossiers.models import Service

    host = Host.objects.get(name=host_name)
    service = Service.objects.get(slug=service_slug)
    from django.db import connection

    connection.close()  # the server and the COPY use their own connections

    results = []
    try:
        with gunicorn(args.workers) as url:
            # Warm-up, not timed: every worker imports the app and opens its connection.
            warm = make_batches(WARM_UP, args.requests, host_name, service_slug, args.gpus)
            run_api(url, warm, token, args.workers)
            for _ in range(args.rounds):
                batches = make_batches(
                    args.batches, args.requests, host_name, service_slug, args.gpus
                )
                api = run_api(url, batches, token, args.workers)
                copy = run_copy(batches, host.pk, service.pk)
                results.append((api[1] / api[0], copy[1] / copy[0], api[1]))
    finally:
        RequestSample.objects.filter(host=host).delete()
        GpuSample.objects.filter(host=host).delete()
        IngestBatch.objects.filter(host=host).delete()
        host.delete()
        service.delete()

    print(f"{args.batches} batches a round x ({args.requests} requests + {args.gpus} GPU samples)")
    print(
        f"server: gunicorn, {args.workers} sync workers on 127.0.0.1; {args.workers} client threads"
    )
    for i, (api_rate, copy_rate, rows) in enumerate(results, 1):
        print(
            f"round {i}: API {api_rate:>9,.0f} samples/s | raw COPY {copy_rate:>9,.0f} samples/s"
            f" | ratio {api_rate / copy_rate:.2f}  ({rows} samples)"
        )
    best_api = max(r[0] for r in results)
    best_copy = max(r[1] for r in results)
    print(f"best of {len(results)}: API {best_api:,.0f} samples/s, COPY {best_copy:,.0f} samples/s")
    print(f"ratio API / COPY = {best_api / best_copy:.2f} (target >= 0.5)")


if __name__ == "__main__":
    main()
