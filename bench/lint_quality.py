"""How often the load-test lint refuses a clean run: synthetic `vllm bench serve` files written
the way vLLM writes them, from realistic runs without any defect.

Each file: a closed loop at concurrency 16 over n requests; per request a TTFT (lognormal, median
250 ms; the first wave queues its prefills, so its TTFTs climb 60 ms a request as on a real
server), a TPOT (lognormal, median 25 ms) and an output length, either ShareGPT-like (lognormal,
median 200) or fixed with ignore_eos (256 tokens); the duration replays the requests through the
16 slots, and every summary key follows from the arrays. Then `loadtests.importing.lint_file`.

    .venv/bin/python bench/lint_quality.py            # 200 files a row (~1 min of CPU)
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections import Counter

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")
os.environ.setdefault("PERFHUB_VAR_DIR", "/tmp/perfhub-bench-lint")

import django

django.setup()

from loadtests.importing import lint_file, parse_file  # noqa: E402

CONCURRENCY = 16
FILES = 200


def makespan(e2e_ms: np.ndarray, slots: int) -> float:
    free = np.array(e2e_ms[:slots], dtype=float)
    for value in e2e_ms[slots:]:
        free[np.argmin(free)] += value
    return float(free.max())


def clean_file(rng: np.random.Generator, n: int, realistic: bool) -> bytes:
    ttft = rng.lognormal(math.log(250), 0.5, n)
    first_wave = min(CONCURRENCY, n)
    ttft[:first_wave] = 60.0 * np.arange(1, first_wave + 1) + rng.normal(0, 5, first_wave)
    tpot = rng.lognormal(math.log(25), 0.4, n)
    if realistic:
        out = np.maximum(2, rng.lognormal(math.log(200), 0.6, n).round()).astype(int)
    else:
        out = np.full(n, 256)
    prompts = np.maximum(4, rng.lognormal(math.log(512), 0.5, n).round()).astype(int)
    e2e = ttft + tpot * (out - 1)
    duration = makespan(e2e, CONCURRENCY) / 1000
    data = {
        "date": "20261120-101500",
        "backend": "vllm",
        "model_id": "m",
        "num_prompts": n,
        "request_rate": "inf",
        "max_concurrency": CONCURRENCY,
        "duration": duration,
        "completed": n,
        "failed": 0,
        "total_input_tokens": int(prompts.sum()),
        "total_output_tokens": int(out.sum()),
        "request_throughput": n / duration,
        "output_throughput": float(out.sum()) / duration,
        "input_lens": prompts.tolist(),
        "output_lens": out.tolist(),
        "ttfts": (ttft / 1000).tolist(),
        "errors": [""] * n,
    }
    if realistic:
        data["dataset_name"] = "sharegpt"
    else:
        data.update(dataset_name="random", random_output_len=256, ignore_eos=True)
    for name, values in (("ttft", ttft), ("tpot", tpot), ("e2el", e2e)):
        data[f"mean_{name}_ms"] = float(values.mean())
        data[f"median_{name}_ms"] = float(np.median(values))
        data[f"p99_{name}_ms"] = float(np.percentile(values, 99))
    return json.dumps(data).encode()


def main() -> None:
    rng = np.random.default_rng(23)
    print(f"{FILES} clean synthetic vLLM files a row, concurrency {CONCURRENCY}.")
    print("requests  outputs     any refusing   any warning   checks that fired")
    for n in (50, 200, 1000):
        for realistic in (True, False):
            refused = warned = 0
            fired: Counter[str] = Counter()
            for _ in range(FILES):
                content = clean_file(rng, n, realistic)
                (lint,) = lint_file(content, parse_file(content, filename="clean.json"))
                refused += bool(lint.refusing)
                warned += any(not f.refusing for f in lint.findings)
                fired.update(f.check for f in lint.findings)
            kind = "ShareGPT" if realistic else "fixed 256"
            checks = ", ".join(f"{name} {count}" for name, count in fired.most_common()) or "-"
            print(
                f"{n:>8,}  {kind:<10}  {refused:>4}/{FILES} {refused / FILES:>5.1%}  "
                f"{warned:>4}/{FILES}     {checks}"
            )


if __name__ == "__main__":
    main()
