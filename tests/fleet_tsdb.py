"""A fleet's raw series in a real Prometheus TSDB, for the aggregated-source test and
`bench/federation.py`: OpenMetrics for N vLLM hosts (engine histograms, counters, gauges) and
their GPUs (dcgm-exporter fields), backfilled with `promtool tsdb create-blocks-from
openmetrics`; PerfHub's recording rules backfilled over it with `promtool tsdb
create-blocks-from rules` against a Prometheus serving the raw blocks; then Prometheus serving
both.

Per host (`SERIES_PER_HOST` = 55): vLLM's request_success (3 finished reasons), prompt and
generation tokens, preemptions, the TTFT (7 edges), end-to-end (6) and inter-token (5)
histograms and the per-request prompt (4) and generation (3) token histograms with sum and
count, 3 gauges; 2 GPUs x 3 DCGM fields. Hosts alternate between two services. Every counter
starts at zero at the first scrape (a fresh engine), and host 1 restarts half-way. The token
histograms and preemptions draw from their own random stream, so the other series are what
they were before vLLM 0.32's families were added.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.promstack import Process, binary, start_prometheus

SERVICES = ("fleet-a", "fleet-b")
GPUS_PER_HOST = 2
HISTOGRAMS = {
    "vllm:time_to_first_token_seconds": (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    "vllm:e2e_request_latency_seconds": (0.5, 1.0, 2.0, 5.0, 10.0, 20.0),
    "vllm:inter_token_latency_seconds": (0.01, 0.025, 0.05, 0.1, 0.25),
}
# vLLM 0.32's per-request token histograms (only their `_sum` and `_count` are read)
TOKEN_HISTOGRAMS = {
    "vllm:request_prompt_tokens": (100.0, 200.0, 500.0, 1000.0),
    "vllm:request_generation_tokens": (50.0, 100.0, 200.0),
}
REASONS = ("stop", "length", "abort")
GAUGES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc")
DCGM = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_POWER_USAGE")
SERIES_PER_HOST = (
    len(REASONS) + 3 + sum(len(e) + 3 for e in (*HISTOGRAMS.values(), *TOKEN_HISTOGRAMS.values()))
    + len(GAUGES)
    + GPUS_PER_HOST * len(DCGM)
)  # fmt: skip


@dataclass
class Fleet:
    hosts: int
    start: int  # unix seconds of the first scrape (a multiple of 60)
    scrapes: int
    scrape_s: int
    samples: int = 0
    # service -> histogram -> per-bucket observations over the whole span (the truth)
    observed: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)

    @property
    def end(self) -> int:
        return self.start + (self.scrapes - 1) * self.scrape_s

    def service_of(self, host: int) -> str:
        return SERVICES[host % len(SERVICES)]


def _cumulative(rng: np.random.Generator, scrapes: int, restart_at: int | None, rate: float):
    """Per-scrape increments -> the cumulative counter an engine exposes (zero at the start,
    and again at a restart)."""
    inc = rng.poisson(rate, scrapes).astype(np.int64)
    inc[0] = 0
    if restart_at is None:
        return np.cumsum(inc)
    before = np.cumsum(inc[:restart_at])
    after = np.cumsum(inc[restart_at:])
    return np.concatenate([before, after])


def write_openmetrics(path: Path, *, hosts: int, start: int, scrapes: int, scrape_s: int) -> Fleet:
    """Write the fleet's OpenMetrics (families contiguous, series in time order, `# EOF`)."""
    fleet = Fleet(hosts=hosts, start=start, scrapes=scrapes, scrape_s=scrape_s)
    times = [str(start + k * scrape_s) for k in range(scrapes)]
    rng = np.random.default_rng(26)
    restart = scrapes // 2
    names = [f"gpu-{h:04d}" for h in range(hosts)]
    # host -> histogram -> (scrapes, buckets) observations per scrape (before the restart's cut)
    per_host: list[dict[str, np.ndarray]] = []
    for h in range(hosts):
        slow = 1.0 + (h % 7) / 3  # hosts differ, so the fleet's percentile is a real merge
        draws = {}
        for name, edges in HISTOGRAMS.items():
            # geometric over the buckets, heavier-tailed on slow hosts; +Inf rare
            weights = np.array([(0.35 + 0.1 * slow) ** i for i in range(len(edges))] + [0.002])
            counts = rng.poisson(4.0, scrapes)
            counts[0] = 0
            draws[name] = rng.multinomial(counts, weights / weights.sum())
        per_host.append(draws)
    added = np.random.default_rng(32)  # vLLM 0.32's families: the draws above stay as they were
    for h in range(hosts):
        for name, edges in TOKEN_HISTOGRAMS.items():
            weights = np.array([0.4**i for i in range(len(edges))] + [0.01])
            counts = added.poisson(4.0, scrapes)
            counts[0] = 0
            per_host[h][name] = added.multinomial(counts, weights / weights.sum())
    families = {**HISTOGRAMS, **TOKEN_HISTOGRAMS}
    for service in SERVICES:
        fleet.observed[service] = {n: np.zeros(len(e) + 1) for n, e in families.items()}

    def series_lines(out, sample: str, labels: str, values) -> None:
        pairs = zip(values, times, strict=True)
        out.writelines(f"{sample}{{{labels}}} {v} {t}\n" for v, t in pairs)
        fleet.samples += len(times)

    def restart_of(h: int) -> int | None:
        return restart if h == 1 else None

    with path.open("w") as out:
        out.write("# TYPE vllm:request_success counter\n")
        for h in range(hosts):
            for reason in REASONS:
                labels = (
                    f'finished_reason="{reason}",instance="{names[h]}",'
                    f'service="{fleet.service_of(h)}"'
                )
                series_lines(out, "vllm:request_success_total", labels,
                             _cumulative(rng, scrapes, restart_of(h), 3.0))  # fmt: skip
        for counter, rate in (("vllm:prompt_tokens", 2000.0), ("vllm:generation_tokens", 800.0)):
            out.write(f"# TYPE {counter} counter\n")
            for h in range(hosts):
                labels = f'instance="{names[h]}",service="{fleet.service_of(h)}"'
                series_lines(out, counter + "_total", labels,
                             _cumulative(rng, scrapes, restart_of(h), rate))  # fmt: skip
        out.write("# TYPE vllm:num_preemptions counter\n")
        for h in range(hosts):
            labels = f'instance="{names[h]}",service="{fleet.service_of(h)}"'
            series_lines(out, "vllm:num_preemptions_total", labels,
                         _cumulative(added, scrapes, restart_of(h), 0.5))  # fmt: skip
        for name, edges in families.items():
            out.write(f"# TYPE {name} histogram\n")
            for h in range(hosts):
                service = fleet.service_of(h)
                draws = per_host[h][name]
                fleet.observed[service][name] += draws.sum(axis=0)
                cut = restart_of(h)
                segments = [draws] if cut is None else [draws[:cut], draws[cut:]]
                cum = np.concatenate([np.cumsum(s, axis=0) for s in segments])  # per bucket
                le_cum = np.cumsum(cum, axis=1)  # cumulative over `le`
                base = f'instance="{names[h]}",service="{service}"'
                for i, edge in enumerate((*edges, "+Inf")):
                    series_lines(out, name + "_bucket", f'{base},le="{edge}"', le_cum[:, i])
                mids = np.array([*edges, edges[-1] * 2])
                sums = np.concatenate([np.cumsum((s * mids).sum(axis=1)) for s in segments]).round(
                    3
                )
                series_lines(out, name + "_sum", base, sums)
                series_lines(out, name + "_count", base, le_cum[:, -1])
        for gauge in GAUGES:
            out.write(f"# TYPE {gauge} gauge\n")
            for h in range(hosts):
                labels = f'instance="{names[h]}",service="{fleet.service_of(h)}"'
                values = rng.uniform(0, 1, scrapes).round(3) if "kv_cache" in gauge else \
                    rng.integers(0, 16, scrapes)  # fmt: skip
                series_lines(out, gauge, labels, values)
        for dcgm_field in DCGM:
            out.write(f"# TYPE {dcgm_field} gauge\n")
            for h in range(hosts):
                for gpu in range(GPUS_PER_HOST):
                    labels = (
                        f'Hostname="{names[h]}",UUID="GPU-{h:04d}-{gpu}",gpu="{gpu}",'
                        f'modelName="NVIDIA H100 80GB HBM3",service="{fleet.service_of(h)}"'
                    )
                    series_lines(out, dcgm_field, labels, rng.integers(10, 100, scrapes))
        out.write("# EOF\n")
    return fleet


def promtool(*args: str, timeout: float = 1800) -> str:
    done = subprocess.run(
        [binary("promtool"), *args], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode:
        raise AssertionError(f"promtool {args[:3]} exited {done.returncode}: {done.stderr[-2000:]}")
    return done.stdout


PROMETHEUS_CONFIG = "global:\n  scrape_interval: 1h\n"  # serves the TSDB; scrapes nothing


def build_tsdb(workdir: Path, openmetrics: Path, rules: Path, *, start: int, end: int) -> Process:
    """Backfill the raw series, then the recording rules over them; return Prometheus serving
    both (the caller stops it)."""
    data = workdir / "data"
    promtool("tsdb", "create-blocks-from", "openmetrics", "--quiet", str(openmetrics), str(data))
    prom = start_prometheus(workdir, PROMETHEUS_CONFIG)
    try:
        rule_blocks = workdir / "rule-blocks"
        promtool(
            "tsdb", "create-blocks-from", "rules", "--quiet", f"--url={prom.url}",
            f"--start={start}", f"--end={end}", f"--output-dir={rule_blocks}", str(rules),
        )  # fmt: skip
    finally:
        prom.stop()
    for block in rule_blocks.iterdir():
        if block.is_dir():
            shutil.move(str(block), data / block.name)
    return start_prometheus(workdir, PROMETHEUS_CONFIG)
