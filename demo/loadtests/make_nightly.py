"""Write the 13B's nightly load tests (`code-review-13b/demo-13b-nightly.jsonl`).

Sixteen nights of `vllm bench serve --max-concurrency 16 --num-prompts 1000 --append-result`,
one JSON line each, as vLLM writes them (with `--save-detailed`'s per-request `ttfts`,
`input_lens`, `output_lens`). Run once; the file is committed.

Each request is drawn from a fixed seed: prompt ~ 512 tokens, output ~ 128, TTFT and TPOT
log-normal (the night's median, log-spread 0.32 and 0.29), end-to-end = TTFT + TPOT x (output
- 1). Each night's medians are the table below: TTFT steps up from night 9 (night 9 +21% on the
first five nights, the nights after +2% to +16%), TPOT wanders by a few percent. Throughput
obeys Little's law with 96% of the 16 slots busy, as the demo sweep does.

A thousand requests a night leave at least ten beyond the P99 on each side, so the release gate
judges the P99s too (`analysis.gate.estimates.TAIL_REQUESTS`).

    python demo/loadtests/make_nightly.py
"""

import json
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "code-review-13b" / "demo-13b-nightly.jsonl"
REQUESTS = 1000
CONCURRENCY = 16
BUSY = 0.96  # of the slots, on average (Little's law: throughput x mean E2E = 0.96 x 16)
TTFT_SPREAD, TPOT_SPREAD = 0.32, 0.29  # log-normal sigma per request
TPOT_MEDIAN_MS = 19.47
# night's date (Nov), TTFT median (ms), TPOT factor
NIGHTS = [
    (3, 114.3, 1.000), (4, 110.5, 1.016), (5, 112.4, 0.977), (6, 115.1, 1.017),
    (7, 120.8, 1.048), (8, 112.5, 0.981), (9, 103.5, 0.932), (10, 108.2, 0.955),
    (11, 139.1, 1.089), (12, 117.0, 0.911), (13, 128.3, 1.023), (14, 128.6, 0.996),
    (15, 130.3, 1.010), (16, 133.2, 1.026), (17, 125.0, 0.984), (18, 120.1, 0.961),
]  # fmt: skip
PERCENTILES = (50, 90, 95, 99)


def stats(name: str, values_ms: np.ndarray) -> dict:
    """vLLM's summary of one metric: mean, median, std and its percentiles (numpy's)."""
    out = {
        f"mean_{name}_ms": float(np.mean(values_ms)),
        f"median_{name}_ms": float(np.median(values_ms)),
        f"std_{name}_ms": float(np.std(values_ms)),
    }
    out.update({f"p{p}_{name}_ms": float(np.percentile(values_ms, p)) for p in PERCENTILES})
    return out


def night(rng: np.random.Generator, day: int, ttft_median: float, tpot_factor: float) -> dict:
    prompt = np.clip(np.rint(rng.normal(512, 40, REQUESTS)), 380, 660).astype(int)
    output = np.clip(np.rint(rng.normal(128, 20, REQUESTS)), 50, 200).astype(int)
    ttft = ttft_median * np.exp(rng.normal(0, TTFT_SPREAD, REQUESTS))
    tpot = TPOT_MEDIAN_MS * tpot_factor * np.exp(rng.normal(0, TPOT_SPREAD, REQUESTS))
    e2e = ttft + tpot * (output - 1)
    throughput = BUSY * CONCURRENCY / (np.mean(e2e) / 1000)
    duration = REQUESTS / throughput
    total_in, total_out = int(prompt.sum()), int(output.sum())
    return {
        "date": f"202611{day:02d}-020000",
        "backend": "openai-chat",
        "label": "nightly",
        "model_id": "codellama/CodeLlama-13b-Instruct-hf",
        "num_prompts": REQUESTS,
        "request_rate": "inf",
        "burstiness": 1.0,
        "max_concurrency": CONCURRENCY,
        "duration": duration,
        "completed": REQUESTS,
        "failed": 0,
        "total_input_tokens": total_in,
        "total_output_tokens": total_out,
        "request_throughput": throughput,
        "output_throughput": total_out / duration,
        "total_token_throughput": (total_in + total_out) / duration,
        **stats("ttft", ttft),
        **stats("tpot", tpot),
        # vLLM's ITL is per token gap; with one gap per token and no stalls it is the TPOT.
        **stats("itl", tpot),
        **stats("e2el", e2e),
        "input_lens": prompt.tolist(),
        "output_lens": output.tolist(),
        "ttfts": np.round(ttft / 1000, 6).tolist(),  # seconds, to the microsecond
        "errors": [""] * REQUESTS,
    }


def main() -> None:
    rng = np.random.default_rng(13)
    lines = [json.dumps(night(rng, *row)) for row in NIGHTS]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} nights of {REQUESTS} requests to {OUT}")


if __name__ == "__main__":
    main()
