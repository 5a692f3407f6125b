"""Large fleets through the Prometheus they run (issue 26, item 3): the cost of syncing one
service from the recording rules' per-service sums, at 10 and at 1,000 hosts, on the real
`prometheus` binary; and the same service read host by host (the per-host mode) as the
reference for both the cost and the percentiles.

    DATABASE_URL=postgres://... .venv/bin/python bench/federation.py [--hosts 10 1000]
        [--minutes 30] [--scrape 30] [--rounds 5]

Data (`tests/fleet_tsdb.py`): per host 55 series (vLLM: request_success x 3 finished reasons,
prompt and generation tokens, preemptions, TTFT / end-to-end / inter-token histograms with 7 / 6
/ 5 edges, per-request prompt / generation token histograms with 4 / 3, 3 gauges; 2 GPUs x 3
DCGM fields), scraped every `--scrape` s for `--minutes`, hosts
alternating between two services. Written as OpenMetrics, backfilled with `promtool tsdb
create-blocks-from openmetrics`; PerfHub's recording rules (`export_recording_rules`, every
60 s) backfilled over it with `promtool tsdb create-blocks-from rules`; then `prometheus` serves
both blocks. PerfHub syncs one service (half the hosts) over the whole span, step 60 s.

Timed, in one process on a throw-away database (`bench_federation_<name>`), with both
Prometheus servers up and settled (their start-up compaction of the overlapping raw and rule
blocks done): the aggregated sync (query + windows + COPY), the median of `--rounds` rounds,
each a fresh source, the rounds alternating between the sizes so both see the same load on the
shared cores; its query alone the same way; then the per-host sync of the same service once at
each size (it reads every host's raw series). Printed: each
figure, the ratio 1,000 / 10 hosts (target within 1.2) and the load average; the percentiles
(P50, P90, P99 of TTFT, end-to-end, ITL) from the roll-ups of both modes and from the
generator's own counts, with the bucket each falls in.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

METRICS = {"ttft": "vllm:time_to_first_token_seconds",
           "e2e": "vllm:e2e_request_latency_seconds",
           "itl": "vllm:inter_token_latency_seconds"}  # fmt: skip
QS = (0.5, 0.9, 0.99)


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def build(hosts: int, args, workdir: Path):
    """The fleet's TSDB with the rules backfilled, served by a settled `prometheus`."""
    import yaml

    from collectors.exposition import recording
    from tests import fleet_tsdb

    scrapes = args.minutes * 60 // args.scrape
    start = (int(time.time()) - (args.minutes + 3) * 60) // 60 * 60
    t0 = time.perf_counter()
    om = workdir / "fleet.om"
    fleet = fleet_tsdb.write_openmetrics(
        om, hosts=hosts, start=start, scrapes=scrapes, scrape_s=args.scrape
    )
    gen_s = time.perf_counter() - t0
    rules = workdir / "rules.yml"
    document = recording.rules_document(["vllm", "dcgm"], interval_s=60)
    rules.write_text(yaml.safe_dump(document, sort_keys=False, width=1000))
    t0 = time.perf_counter()
    end = min(fleet.end + 120, int(time.time()) - 5)
    prom = fleet_tsdb.build_tsdb(workdir, om, rules, start=start, end=end)
    tsdb_s = time.perf_counter() - t0
    settle_s = settle(prom.url)
    print(
        f"{hosts:,} hosts: {fleet.samples:,} samples ({om.stat().st_size / 1e6:,.0f} MB of "
        f"OpenMetrics, written in {gen_s:.0f} s); TSDB and rules backfilled, prometheus up in "
        f"{tsdb_s:.0f} s, settled (its compactions done) {settle_s:.0f} s later",
        flush=True,
    )
    om.unlink()
    return prom, fleet


def settle(url: str, timeout: float = 300) -> float:
    """Wait until Prometheus stops using CPU (it compacts the overlapping raw and rule blocks
    after start): timing syncs against a busy server would measure its compaction."""
    import requests

    def cpu() -> float:
        text = requests.get(url + "/metrics", timeout=5).text
        line = next(x for x in text.splitlines() if x.startswith("process_cpu_seconds_total"))
        return float(line.split()[-1])

    t0 = time.perf_counter()
    quiet = 0
    before = cpu()
    while quiet < 3 and time.perf_counter() - t0 < timeout:
        time.sleep(2)
        now = cpu()
        quiet = quiet + 1 if now - before < 0.1 else 0
        before = now
    return time.perf_counter() - t0


def sync(prom_url: str, service, mode: str, name: str):
    from collectors.services.prometheus import source_create, source_sync

    source = source_create(
        name=name, service=service, base_url=prom_url, mode=mode,
        engine_selector='service="fleet-a"', step_s=60, backfill_hours=1,
    )  # fmt: skip
    t = time.perf_counter()
    outcome = source_sync(source_id=source.pk)
    took = time.perf_counter() - t
    if not outcome.ok:
        raise SystemExit(f"{mode} sync failed: {outcome.error}")
    return took, source


def compare(fleet, agg_source, host_source) -> dict:
    import numpy as np

    from analysis import buckets
    from collectors.distributions import Traffic
    from collectors.models import ServiceRollup

    def traffic(source) -> Traffic:
        t = Traffic()
        for row in ServiceRollup.objects.filter(host=source.host, resolution_s=60):
            t.add_row(row)
        return t

    agg, per = traffic(agg_source), traffic(host_source)
    rows = []
    for metric, name in METRICS.items():
        a_bc, p_bc = agg.merged_buckets(metric), per.merged_buckets(metric)
        truth_counts = tuple(float(c) for c in fleet.observed["fleet-a"][name])
        truth = buckets.BucketCounts(a_bc.edges, truth_counts, 0.0)
        for q in QS:
            a, p, t = (buckets.quantile(bc, q) for bc in (a_bc, p_bc, truth))
            rows.append((metric, q, a, p, t))
    return {
        "percentiles": rows,
        "requests": (agg.scraped_requests, per.scraped_requests),
        "counts_equal": {
            m: bool(np.array_equal(agg.merged_buckets(m).counts, per.merged_buckets(m).counts))
            for m in METRICS
        },
    }


def shown(p) -> str:
    def ms(v):
        return "inf" if v is None else f"{v * 1000:,.0f}"

    if p.value is not None:
        value = ms(p.value)
    else:  # beyond the last edge, or (Percentile's convention) within the first bucket
        value = f"> {ms(p.lower)}" if p.upper is None else f"< {ms(p.upper)}"
    return f"{value:>7} [{ms(p.lower)}, {ms(p.upper)}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--minutes", type=int, default=30, help="span of data (<= 55)")
    parser.add_argument("--scrape", type=int, default=30, help="scrape interval, seconds")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if not 5 <= args.minutes <= 55:
        raise SystemExit("--minutes: between 5 and 55 (the sync reads one hour back)")

    import django

    django.setup()
    from decimal import Decimal

    from django.conf import settings
    from django.db import connection
    from django.test.utils import setup_test_environment

    from dossiers.models import Service, Team

    setup_test_environment()
    settings.PERFHUB_OUTBOUND_ALLOW_CIDRS = ["127.0.0.0/8"]  # the bench's Prometheus
    old_name = connection.settings_dict["NAME"]
    connection.settings_dict["TEST"]["NAME"] = f"bench_federation_{Path(str(old_name)).name}"
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    print(f"load average at start {load()}; {connection.vendor}; {os.cpu_count()} cores")
    from collectors.exposition import recording
    from collectors.services.prometheus import query_samples
    from collectors.services.rollups import rollup_pending

    results: list[dict] = []
    stack = contextlib.ExitStack()
    try:
        team = Team.objects.create(slug="bench", name="Bench")
        sizes = []
        for hosts in args.hosts:
            service = Service.objects.create(
                slug=f"fleet-{hosts}", name=f"Fleet {hosts}", team=team, model_name="m",
                model_params_b=Decimal(8), engine="vllm", gpu_model="H100", gpus_per_replica=1,
                replicas=1, gpu_hour_price=2,
            )  # fmt: skip
            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="federation-")))
            prom, fleet = build(hosts, args, workdir)
            stack.callback(prom.stop)
            sync(prom.url, service, "aggregated", f"warm-{hosts}")  # first query, imports
            sizes.append({"hosts": hosts, "samples": fleet.samples, "prom": prom,
                          "fleet": fleet, "service": service, "aggregated_all": [],
                          "query_all": []})  # fmt: skip
        # Rounds alternate between the sizes, so both see the same load on the shared cores.
        load_before = load()
        query = recording.recorded_query("vllm", 'service="fleet-a"')
        for r in range(args.rounds):
            for size in sizes:
                took, size["agg_source"] = sync(
                    size["prom"].url, size["service"], "aggregated", f"agg-{size['hosts']}-{r}"
                )
                size["aggregated_all"].append(took)
                now = int(time.time())
                t = time.perf_counter()
                query_samples(size["prom"].url, query, now - 3600, now)
                size["query_all"].append(time.perf_counter() - t)
        load_aggregated = f"{load_before} -> {load()}"
        for size in sizes:
            size["aggregated"] = statistics.median(size["aggregated_all"])
            size["query_only"] = statistics.median(size["query_all"])
            size["load_aggregated"] = load_aggregated
            load_before = load()
            size["per_host"], size["host_source"] = sync(
                size["prom"].url, size["service"], "per_host", f"host-{size['hosts']}"
            )
            size["load_per_host"] = f"{load_before} -> {load()}"
        rollup_pending()
        for size in sizes:
            size.update(compare(size["fleet"], size["agg_source"], size["host_source"]))
        results = sizes
    finally:
        stack.close()
        connection.creation.destroy_test_db(old_name, verbosity=0)

    print(
        f"\nscrape every {args.scrape} s, {args.minutes} min, 55 series per host (49 vLLM, "
        f"2 GPUs x 3 DCGM); the synced service has half the hosts; rules and step 60 s"
    )
    for r in results:
        runs = ", ".join(f"{t * 1000:.0f}" for t in r["aggregated_all"])
        print(
            f"{r['hosts']:>6,} hosts ({r['samples']:,} samples): aggregated sync median "
            f"{r['aggregated'] * 1000:,.0f} ms (rounds {runs}; load {r['load_aggregated']}; "
            f"its query alone {r['query_only'] * 1000:,.0f} ms); "
            f"per-host sync {r['per_host'] * 1000:,.0f} ms (load {r['load_per_host']})"
        )
    if len(results) >= 2:
        small, large = results[0], results[-1]
        ratio = large["aggregated"] / small["aggregated"]
        print(
            f"aggregated {large['hosts']:,} / {small['hosts']:,} hosts: {ratio:.2f} "
            f"(target within 1.2); per-host: {large['per_host'] / small['per_host']:.1f}"
        )
    for r in results:
        agg_req, per_req = r["requests"]
        print(
            f"\n{r['hosts']:,} hosts: finished requests aggregated {agg_req:,.0f}, per-host "
            f"{per_req:,.0f}; bucket counts equal: {r['counts_equal']}"
        )
        print("           aggregated [bucket] ms    per-host [bucket] ms    generator [bucket] ms")
        for metric, q, a, p, t in r["percentiles"]:
            same = (a.lower, a.upper) == (p.lower, p.upper) == (t.lower, t.upper)
            print(
                f"{metric:>4} P{q * 100:g}: {shown(a):>24}  {shown(p):>24}  {shown(t):>24}"
                f"  {'same bucket' if same else 'DIFFERENT BUCKET'}"
            )


if __name__ == "__main__":
    main()
