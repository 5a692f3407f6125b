"""Ingest budget (docs/measurements.md): samples/s through the real HTTP API vs the database's
own speed on the same rows.

    DATABASE_URL=postgres://... .venv/bin/python bench/ingest.py [--batches 40] [--rounds 3]
        [--workers N] [--clients N] [--per-row] [--per-batch-copy]
    DATABASE_URL=postgres://... .venv/bin/python bench/ingest.py --memory [--samples 10000000]

Server: gunicorn started by this script on 127.0.0.1 with deploy/gunicorn.conf.py, as deploy/web.sh
starts it (sync workers, one per CPU by default),
talking to the PostgreSQL in DATABASE_URL; the client posts agent batches (docs/contracts.md)
from as many threads as there are workers (`--clients`: another number), each with a
keep-alive session.

Reference (the budget): the same rows (request samples + GPU samples, timestamps in UTC),
formatted as COPY text before timing, loaded with `COPY ... FROM STDIN` in 1 MiB writes, one
COPY per table per connection, on as many connections as the API has workers, into the same
tables with the same indexes: what `psql \\copy` of a prepared file does. `--per-row` also
times the old reference (one `write_row` call per row from Python tuples, one transaction per
batch, one connection), printed for comparison only: it measures psycopg's per-row path.

Rounds alternate API and reference (so background load hits both); prints each round, the best
rate of each, their ratio and the median of the rounds' own ratios (target >= 0.5). A
measurement, not a test: numbers depend on the machine.

`--memory` (issue 14): one long run of `--samples` samples through the same server, each batch
a new batch_id over `--batches` prepared bodies (their rows repeat timestamps, which the raw
tables allow), posted a million at a time. The gunicorn workers' resident memory (VmRSS from
/proc) is read after each million (target: the end within 1.2x of the first million, i.e.
flat). After each million, the COPY-text reference loads as many rows into the same tables,
timed apart, so both sides pay for the same table sizes as it grows (to twice `--samples`
rows): the API's samples/s over its own seconds against the reference's over its own, target
>= 0.8. Also printed, the earlier reading (stops 14-52): against the mean of a short COPY
timed just before the run and one just after it.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WARM_UP = 6  # batches posted before timing (spread over the workers)
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

# The COPY references live beside this script; `bench` imports from ROOT (on sys.path
# above), whatever the working directory.
from bench.copy_reference import run_copy_rows, run_copy_text  # noqa: E402
from bench.cpu_meter import Cpu, measure, worker_pids  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def make_batches(n: int, per_batch: int, host: str, service: str, gpus: int) -> list[dict]:
    import numpy as np

    rng = np.random.default_rng(1)
    # Ten seconds apart (one host's push interval), all in the past: inside the acceptance
    # window whatever the number of batches.
    start = datetime.now(UTC) - timedelta(seconds=10 * n + 300)
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
    """gunicorn serving PerfHub on a free loopback port; yields (the ingest URL, the master's
    pid) once it answers."""
    import requests

    port = free_port()
    server = subprocess.Popen(
        [
            sys.executable, "-m", "gunicorn", "perfhub.wsgi", "--bind", f"127.0.0.1:{port}",
            "--config", "deploy/gunicorn.conf.py",  # as deploy/web.sh serves it
            "--workers", str(workers), "--log-level", "warning",
        ],
        cwd=ROOT,
        env={
            **os.environ, "ALLOWED_HOSTS": "127.0.0.1", "PERFHUB_INGEST_MAX_BYTES": str(50 << 20),
            # No push-rate limit: the bench is one host (one token) pushing flat out.
            "PERFHUB_INGEST_RATE": "", "PERFHUB_THROTTLE_INGEST": "1000000/min",
        },
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/v1/ingest/"
    try:
        # A loaded machine takes tens of seconds to import the app in every worker.
        deadline = time.monotonic() + 180
        while True:
            try:
                requests.get(url, timeout=5)  # 405/401 once the server answers
                break
            except requests.RequestException:
                if server.poll() is not None:
                    raise SystemExit(
                        f"gunicorn exited ({server.returncode}) before answering"
                    ) from None
                if time.monotonic() > deadline:
                    raise SystemExit(f"gunicorn did not answer on {url} within 180 s") from None
                time.sleep(0.1)
        yield url, server.pid
    finally:
        server.terminate()
        try:
            server.wait(60)  # a loaded machine takes a while to stop the workers
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


class Poster:
    """One keep-alive HTTP connection posting ingest bodies; calling it returns the samples
    stored. The standard library's `http.client`: the client shares the server's cores."""

    def __init__(self, url: str, token: str) -> None:
        address = urllib.parse.urlsplit(url)
        self.path = address.path
        self.headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
        self.conn = http.client.HTTPConnection(address.hostname, address.port, timeout=60)

    def __enter__(self) -> Poster:
        return self

    def __exit__(self, *exc) -> None:
        self.conn.close()

    def __call__(self, body: bytes) -> int:
        self.conn.request("POST", self.path, body=body, headers=self.headers)
        response = self.conn.getresponse()
        answer = response.read()
        if response.status != 202:
            raise SystemExit(f"ingest answered {response.status}: {answer[:500]!r}")
        counts = json.loads(answer)["counts"]
        return counts["requests"] + counts["gpus"]


def run_api(
    url: str,
    batches: list[dict],
    token: str,
    workers: int,
    cpu: tuple[list[int], list[Cpu]] | None = None,
) -> tuple[float, int]:
    """Post every batch from `workers` client threads (each its own keep-alive connection).
    `cpu`: (the gunicorn worker pids, a list that gets the CPU the timed part cost).

    Bodies are encoded before timing, as the reference's COPY text is formatted before its
    timing, and posted with the standard library's `http.client`: the client shares the
    server's cores here (an agent runs on its own host), so it should cost the machine as
    little as the reference's COPY client does."""
    bodies = [json.dumps(b).encode() for b in batches]

    def post_all(chunk: list[bytes]) -> int:
        with Poster(url, token) as post:
            return sum(post(body) for body in chunk)

    chunks = [bodies[i::workers] for i in range(workers)]
    with measure(cpu[0] if cpu else ()) as meter:
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            stored = sum(pool.map(post_all, chunks))
        elapsed = time.perf_counter() - started
    if cpu:
        cpu[1].append(meter.used)
    return elapsed, stored


def vacuum(*models) -> None:
    """VACUUM the tables the bench wrote: its rows are deleted at the end, and the dead ones
    left behind (millions after `--memory`) would make the next run measure a bloated table."""
    from django.db import connection

    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"VACUUM (ANALYZE) {connection.ops.quote_name(model._meta.db_table)}")


def worker_rss(master_pid: int) -> dict[int, int]:
    """Resident memory in bytes (VmRSS) of each of the gunicorn master's worker processes."""
    children = Path(f"/proc/{master_pid}/task/{master_pid}/children")
    pids = [int(p) for p in children.read_text().split()]
    rss = {}
    for pid in pids:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                rss[pid] = int(line.split()[1]) * 1024  # reported in kB
    return rss


@dataclass(frozen=True)
class Pair:
    """One million of the long run: the API's seconds and samples, then the COPY reference's
    seconds and rows loaded right after it."""

    api_seconds: float
    api_samples: int
    copy_seconds: float
    copy_rows: int

    @property
    def ratio(self) -> float:
        return (self.api_samples / self.api_seconds) / (self.copy_rows / self.copy_seconds)


def run_api_memory(
    url: str,
    master_pid: int,
    templates: list[dict],
    token: str,
    workers: int,
    samples: int,
    reference: Callable[[int], tuple[float, int]] | None = None,
) -> tuple[float, int, list[tuple[int, float, dict[int, int]]], list[Pair]]:
    """Post batches (`templates` in turn, each under a new batch_id) until `samples` are stored,
    a million at a time; returns (seconds posting, samples stored, [(samples stored, seconds,
    worker RSS)] after each million and at the end, a `Pair` a million with `reference`).

    After each million, with the server idle, `reference(samples of that million)` loads as
    many rows by COPY (timed apart: the API's seconds are its own). The two sides then take
    turns on the same tables as they grow, so each pays for the same table size. Bodies are
    serialized once: the client must not be what limits the run."""
    marker = b"00000000-0000-4000-8000-000000000000"
    bodies = [json.dumps({**b, "batch_id": marker.decode()}).encode() for b in templates]
    per_batch = len(templates[0]["requests"]) + len(templates[0]["gpus"])
    total_batches = -(-samples // per_batch)
    per_segment = -(-1_000_000 // per_batch)
    lock = threading.Lock()
    state = {"next": 0}  # the next batch to post, shared by the posting threads
    marks: list[tuple[int, float, dict[int, int]]] = []
    pairs: list[Pair] = []
    posting, stored = 0.0, 0

    def post_until(last: int) -> int:
        stored = 0
        with Poster(url, token) as post:
            while True:
                with lock:
                    n = state["next"]
                    if n >= last:
                        return stored
                    state["next"] = n + 1
                stored += post(bodies[n % len(bodies)].replace(marker, str(uuid.uuid4()).encode()))

    while state["next"] < total_batches:
        last = min(state["next"] + per_segment, total_batches)
        started = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            segment = sum(pool.map(post_until, [last] * workers))
        seconds = time.perf_counter() - started
        posting += seconds
        stored += segment
        marks.append((stored, posting, worker_rss(master_pid)))
        line = f"  {stored:>12,} samples {posting:7.1f} s | API {segment / seconds:,.0f}/s"
        if reference is not None:
            pair = Pair(seconds, segment, *reference(segment))
            pairs.append(pair)
            line += f", COPY {pair.copy_rows / pair.copy_seconds:,.0f}/s, ratio {pair.ratio:.2f}"
        print(line, flush=True)
    return posting, stored, marks, pairs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=40, help="batches posted per round")
    parser.add_argument(
        "--rounds", type=int, default=3, help="API then the references, this many times"
    )
    parser.add_argument("--requests", type=int, default=1000, help="request samples per batch")
    parser.add_argument("--gpus", type=int, default=8, help="GPU samples per batch")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument(
        "--clients",
        type=int,
        default=0,
        help="client threads posting (default: one per worker; more keeps every worker busy "
        "while a client reads its answer, as many hosts pushing at once do)",
    )
    parser.add_argument(
        "--per-row",
        action="store_true",
        help="also time the old reference (write_row per row, one connection); not the budget",
    )
    parser.add_argument(
        "--per-batch-copy",
        action="store_true",
        help="also time the COPY text with a transaction per batch (what the API commits); "
        "printed beside the budget's reference, not instead of it",
    )
    parser.add_argument(
        "--memory",
        action="store_true",
        help="one long run of --samples samples: worker RSS and samples/s vs the COPY reference",
    )
    parser.add_argument(
        "--samples", type=int, default=10_000_000, help="samples posted in a --memory run"
    )
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
    api_cpu: list[Cpu] = []
    copy_cpu: list[Cpu] = []
    memory = None
    try:
        with gunicorn(args.workers) as (url, master_pid):
            # Warm-up, not timed: every worker imports the app and opens its connection.
            warm = make_batches(WARM_UP, args.requests, host_name, service_slug, args.gpus)
            run_api(url, warm, token, args.workers)
            if args.memory:
                batches = make_batches(
                    args.batches, args.requests, host_name, service_slug, args.gpus
                )
                before = run_copy_text(batches, host.pk, service.pk, args.workers)
                rows_per_load = len(batches) * (args.requests + args.gpus)

                def reference(samples: int) -> tuple[float, int]:
                    repeat = max(1, round(samples / rows_per_load))
                    return run_copy_text(batches, host.pk, service.pk, args.workers, repeat=repeat)

                api = run_api_memory(
                    url, master_pid, batches, token, args.workers, args.samples, reference
                )
                after = run_copy_text(batches, host.pk, service.pk, args.workers)
                memory = (api, before, after)
            for _ in range(0 if args.memory else args.rounds):
                batches = make_batches(
                    args.batches, args.requests, host_name, service_slug, args.gpus
                )
                api = run_api(
                    url, batches, token, args.clients or args.workers,
                    cpu=(worker_pids(master_pid), api_cpu),
                )  # fmt: skip
                text = run_copy_text(batches, host.pk, service.pk, args.workers, cpu=copy_cpu)
                rows = run_copy_rows(batches, host.pk, service.pk) if args.per_row else None
                unit = None
                if args.per_batch_copy:
                    unit = run_copy_text(batches, host.pk, service.pk, args.workers, True)
                results.append((api, text, rows, unit))
    finally:
        RequestSample.objects.filter(host=host).delete()
        GpuSample.objects.filter(host=host).delete()
        IngestBatch.objects.filter(host=host).delete()
        host.delete()
        service.delete()
        vacuum(RequestSample, GpuSample, IngestBatch)

    def rate(run: tuple[float, int] | None) -> float:
        return run[1] / run[0] if run else float("nan")

    if memory is not None:
        report_memory(args, *memory, rate=rate)
        return

    print(f"load average at the end: {load_average()}")
    print(f"{args.batches} batches a round x ({args.requests} requests + {args.gpus} GPU samples)")
    print(
        f"API: gunicorn, {args.workers} sync workers on 127.0.0.1, "
        f"{args.clients or args.workers} client threads;"
        f" reference: COPY of preformatted text on {args.workers} connections"
    )
    for i, (api, text, rows, unit) in enumerate(results, 1):
        line = (
            f"round {i}: API {rate(api):>9,.0f} samples/s | COPY text {rate(text):>9,.0f}"
            f" samples/s | ratio {rate(api) / rate(text):.2f}"
        )
        if rows:
            line += f" | (per-row COPY, 1 connection: {rate(rows):,.0f})"
        if unit:
            line += f" | (COPY text a commit per batch: {rate(unit):,.0f}, API / it "
            line += f"{rate(api) / rate(unit):.2f})"
        print(line)
    best_api = max(rate(r[0]) for r in results)
    best_text = max(rate(r[1]) for r in results)
    print(f"best of {len(results)}: API {best_api:,.0f} samples/s, COPY text {best_text:,.0f}")
    # Each round's pair ran in the same minute, so its ratio sees the same background load;
    # the median of those is steadier than best-of against best-of on a shared machine.
    paired = statistics.median(rate(api) / rate(text) for api, text, *_ in results)
    print(
        f"ratio API / COPY text = {best_api / best_text:.2f} best-of, {paired:.2f} median of"
        " rounds (target >= 0.5)"
    )
    report_cpu(results, api_cpu, copy_cpu)


def report_cpu(results: list, api_cpu: list[Cpu], copy_cpu: list[Cpu]) -> None:
    """CPU per 1,000 samples stored, each side summed over the rounds: what a sample costs
    the machine whatever else runs on it (the ratio of rates also depends on how the two
    sides overlap on the cores)."""
    if not api_cpu or not copy_cpu:
        return
    api_n = sum(api[1] for api, *_ in results) / 1000
    copy_n = sum(text[1] for _, text, *_ in results) / 1000

    def per(cpu: list[Cpu], n: float, part: str) -> float:
        return sum(getattr(c, part) for c in cpu) / n * 1000  # ms per 1,000 samples

    api = {part: per(api_cpu, api_n, part) for part in ("workers", "postgres", "client", "total")}
    ref = {part: per(copy_cpu, copy_n, part) for part in ("postgres", "client", "total")}
    print(
        f"CPU per 1,000 samples: API {api['total']:.2f} ms (gunicorn workers"
        f" {api['workers']:.2f}, PostgreSQL {api['postgres']:.2f}, client {api['client']:.2f})"
        f" | COPY text {ref['total']:.2f} ms (PostgreSQL {ref['postgres']:.2f},"
        f" client {ref['client']:.2f}) | COPY / API {ref['total'] / api['total']:.2f}"
    )


def load_average() -> str:
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def report_memory(args, api, before, after, *, rate) -> None:
    elapsed, stored, marks, pairs = api
    mib = 1 << 20
    print(
        f"{stored:,} samples through the API in {elapsed:,.0f} s: gunicorn, {args.workers} sync"
        f" workers, {args.workers} client threads, batches of {args.requests} requests +"
        f" {args.gpus} GPU samples"
    )
    print("worker RSS (MiB) by samples stored:")
    for n, seconds, rss in marks:
        per_worker = " ".join(f"{pid}:{size / mib:.1f}" for pid, size in sorted(rss.items()))
        print(f"  {n:>12,}  {seconds:7.1f} s  total {sum(rss.values()) / mib:7.1f}  {per_worker}")
    first, last = marks[0][2], marks[-1][2]
    if len(marks) > 1 and set(first) == set(last):
        worst = max(last[pid] / first[pid] for pid in first)
        total = sum(last.values()) / sum(first.values())
        print(
            f"RSS at the end / after {marks[0][0]:,} samples: total {total:.2f},"
            f" worst worker {worst:.2f} (target <= 1.2)"
        )
    elif len(marks) == 1:
        print("fewer than a million samples: no first-million reading to compare with")
    else:
        print("the worker processes changed during the run: RSS ratio not comparable")
    if len(marks) > 1:
        n0, t0, _ = marks[0]
        print(
            f"API samples/s: whole run {stored / elapsed:,.0f}; first {n0:,} {n0 / t0:,.0f};"
            f" the rest {(stored - n0) / (elapsed - t0):,.0f}"
        )
    api_rate = stored / elapsed
    print(f"load average at the end: {load_average()}")
    if pairs:
        # The budget's reading: COPY loaded as many rows as the API after each of its
        # millions, so both sides paid for the same table sizes, and the run's whole seconds
        # of each side are compared.
        copy_seconds = sum(p.copy_seconds for p in pairs)
        copy_rows = sum(p.copy_rows for p in pairs)
        ratios = [p.ratio for p in pairs]
        print(
            f"COPY text on {args.workers} connections, the same number of rows after each API"
            f" million: {copy_rows:,} rows at {copy_rows / copy_seconds:,.0f} samples/s"
        )
        print(
            f"ratio API / COPY text, interleaved = {api_rate / (copy_rows / copy_seconds):.2f}"
            f" over the whole run, {statistics.median(ratios):.2f} median of the millions"
            f" (range {min(ratios):.2f}-{max(ratios):.2f}; target >= 0.8)"
        )
    print(
        f"COPY text on {args.workers} connections ({args.batches} batches): before the run"
        f" {rate(before):,.0f} samples/s, after it (table at its largest) {rate(after):,.0f}"
    )
    # The earlier reading (stops 14-52): the run against the mean of two short COPYs, one
    # into the empty table and one into the full one.
    mean = (rate(before) + rate(after)) / 2
    print(
        f"ratio API (whole run) / COPY text at the ends = {api_rate / mean:.2f} against their"
        f" mean ({api_rate / rate(before):.2f} / {api_rate / rate(after):.2f} against before /"
        " after)"
    )


if __name__ == "__main__":
    main()
