"""Demo data for the load-test pages: a concurrency sweep of the 13B demo service, and its
nightly regression history (c=16, shorter prompts) where TTFT P50 steps up by ~12% at run 9 of
16, so the dossier timeline shows a change point.

The sweep has the seed's shape (DESIGN.md section 1): from concurrency 1 to 16 each doubling
buys x1.78 throughput for x1.17 P99 (10x for <2x overall), 16 -> 32 buys +20% for 2x, and
32 -> 64 only +3% for 2x more; so the sweep page names 16. Runs are written as `vllm bench serve
--append-result` JSON lines, generated here from a seeded generator (deterministic, so calling
this twice imports nothing new), and go through the same importer as real files.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

import numpy as np

from dossiers.models import Service
from loadtests.importing import import_loadtest_file
from loadtests.models import LoadTest

CONCURRENCIES = (1, 2, 4, 8, 16, 32, 64)
REQUESTS = 300
SEED = 13
START = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
FILENAME = "demo-13b-concurrency-sweep.jsonl"


def _shape(concurrency: int) -> tuple[float, float]:
    """(output tokens/s, P99 e2e ms) at a concurrency, on the seed's curve."""
    steps = math.log2(concurrency)
    if concurrency <= 16:
        return 95.0 * 1.78**steps, 2400.0 * 1.17**steps
    at_16 = (95.0 * 1.78**4, 2400.0 * 1.17**4)
    if concurrency == 32:
        return at_16[0] * 1.20, at_16[1] * 2.0
    return at_16[0] * 1.20 * 1.03, at_16[1] * 4.0


def _percentiles(values: np.ndarray, name: str) -> dict[str, float]:
    out = {
        f"mean_{name}_ms": float(values.mean()),
        f"median_{name}_ms": float(np.median(values)),
        f"std_{name}_ms": float(values.std()),
    }
    for p in (50, 90, 95, 99):
        out[f"p{p}_{name}_ms"] = float(np.percentile(values, p))
    return out


def _run(
    rng: np.random.Generator,
    concurrency: int,
    when: datetime,
    *,
    prompt: int = 1024,
    output: int = 256,
    ttft_factor: float = 1.0,
    label: str = "demo sweep",
) -> dict:
    tps, p99 = _shape(concurrency)
    input_lens = rng.normal(prompt, 40, REQUESTS).round().astype(int)
    output_lens = rng.normal(output, 20, REQUESTS).round().astype(int)
    # Log-normal e2e latencies scaled so their P99 lands on the curve.
    e2e = rng.lognormal(0.0, 0.25, REQUESTS)
    e2e *= p99 / np.percentile(e2e, 99)
    ttft = e2e * rng.uniform(0.03, 0.06, REQUESTS) * ttft_factor
    tpot = (e2e - ttft) / np.maximum(output_lens - 1, 1)
    total_out = int(output_lens.sum())
    duration = total_out / tps
    return {
        "date": when.strftime("%Y%m%d-%H%M%S"),
        "backend": "openai-chat",
        "label": label,
        "model_id": "meta-llama/Llama-2-13b-chat-hf",
        "num_prompts": REQUESTS,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": concurrency,
        "duration": duration,
        "completed": REQUESTS,
        "failed": 0,
        "total_input_tokens": int(input_lens.sum()),
        "total_output_tokens": total_out,
        "request_throughput": REQUESTS / duration,
        "output_throughput": tps,
        "total_token_throughput": (int(input_lens.sum()) + total_out) / duration,
        **_percentiles(ttft, "ttft"),
        **_percentiles(tpot, "tpot"),
        **_percentiles(tpot, "itl"),
        **_percentiles(e2e, "e2el"),
        "input_lens": input_lens.tolist(),
        "output_lens": output_lens.tolist(),
        "ttfts": (ttft / 1000).tolist(),
        "errors": [""] * REQUESTS,
    }


def demo_sweep_file() -> bytes:
    """The sweep as `vllm bench serve --append-result` JSON lines."""
    rng = np.random.default_rng(SEED)
    lines = [
        json.dumps(_run(rng, c, START + timedelta(minutes=5 * i)))
        for i, c in enumerate(CONCURRENCIES)
    ]
    return ("\n".join(lines) + "\n").encode()


HISTORY_RUNS = 16
HISTORY_STEP = 9  # the first run (1-based) with the slower prefill
HISTORY_START = datetime(2026, 11, 3, 2, 0, tzinfo=UTC)
HISTORY_FILENAME = "demo-13b-nightly.jsonl"


def demo_history_file() -> bytes:
    """Nightly c=16 runs as JSON lines; from run HISTORY_STEP on, TTFT is 12% slower."""
    rng = np.random.default_rng(SEED + 1)
    lines = []
    for night in range(HISTORY_RUNS):
        factor = 1.12 if night + 1 >= HISTORY_STEP else 1.0
        when = HISTORY_START + timedelta(days=night)
        run = _run(rng, 16, when, prompt=512, output=128, ttft_factor=factor, label="nightly")
        lines.append(json.dumps(run))
    return ("\n".join(lines) + "\n").encode()


def _thirteen_b(services: Iterable[Service]) -> Service | None:
    services = list(services)
    for service in services:
        if service.model_params_b is not None and float(service.model_params_b) == 13:
            return service
    return next((s for s in services if "13b" in s.slug.lower()), None)


def add_demo_loadtests(services: Iterable[Service]) -> None:
    """Import the demo sweep and history for the 13B service among `services` (none: nothing)."""
    service = _thirteen_b(services)
    if service is None:
        return
    for content, filename in (
        (demo_sweep_file(), FILENAME),
        (demo_history_file(), HISTORY_FILENAME),
    ):
        import_loadtest_file(
            service=service, content=content, filename=filename, origin=LoadTest.Origin.DEMO
        )
