"""Write the demo's request-rate sweeps (one `vllm bench serve --append-result` file per service).

Run once; the files are committed. Each service's curve is shaped like a queue filling up
(TTFT ~ 1 + 0.5 u / (1 - u) with u = rate / capacity; TPOT rising with the batch), passing
through the service's current baseline, with 5% log-normal run noise from a fixed seed.

    python demo/loadtests/make_rate_sweeps.py
"""

import json
import math
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
# slug: (model, baseline rate, capacity (req/s), rates, TTFT p50/p99, TPOT p50/p99 at the
#        baseline rate, prompt tokens, output tokens)
SERVICES = {
    "support-chat-7b": (
        "meta-llama/Llama-2-7b-chat-hf",
        24,
        34,
        [4, 8, 12, 16, 20, 24, 28, 30, 32],
        (78, 260),
        (13.4, 19.0),
        350,
        48,
    ),
    "doc-summarizer": (
        "meta-llama/Llama-3.1-8B-Instruct",
        20,
        30,
        [4, 8, 12, 16, 20, 24, 26, 28],
        (95, 240),
        (4.3, 5.9),
        1800,
        110,
    ),
    "rag-answers-70b": (
        "meta-llama/Llama-3.1-70B-Instruct",
        3,
        4.4,
        [0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4],
        (530, 2300),
        (17.5, 29.0),
        5200,
        180,
    ),
    "safety-guard-8b": (
        "meta-llama/Llama-Guard-3-8B",
        8,
        12,
        [1, 2, 4, 6, 8, 9, 10, 11],
        (62, 170),
        (14.0, 21.0),
        650,
        6,
    ),
}


def shape(u: float) -> float:
    return 1 + 0.5 * u / (1 - u)


def tpot_shape(u: float) -> float:
    return 1 + 0.6 * u**2


def main() -> None:
    rng = random.Random(22)
    for slug, spec in SERVICES.items():
        write(slug, f"demo-{slug}-rate-sweep.jsonl", rate_sweep(rng, *spec))
    concurrency_sweep(rng)
    second_configuration(rng)


def rate_sweep(
    rng: random.Random,
    model: str,
    base: float,
    cap: float,
    rates: list[float],
    ttft: tuple[float, float],
    tpot: tuple[float, float],
    prompt: int,
    out: int,
    *,
    day: str = "20261103",
    metadata: dict[str, str] | None = None,
) -> list[str]:
    """One `--append-result` line per rate; `metadata` as `vllm bench serve --metadata` writes
    it (between `num_prompts` and `request_rate`)."""
    b = base / cap
    lines = []
    for i, rate in enumerate(rates):
        u = rate / cap
        noise = [math.exp(rng.gauss(0, 0.05)) for _ in range(4)]
        t50 = ttft[0] * shape(u) / shape(b) * noise[0]
        t99 = ttft[1] * shape(u) ** 1.3 / shape(b) ** 1.3 * noise[1]
        p50 = tpot[0] * tpot_shape(u) / tpot_shape(b) * noise[2]
        p99 = tpot[1] * tpot_shape(u) / tpot_shape(b) * noise[3]
        completed = 600
        duration = completed / rate
        run = {
            "date": f"{day}-{9 + i:02d}0000",
            "backend": "openai-chat",
            "label": "demo rate sweep",
            "model_id": model,
            "num_prompts": completed,
            **(metadata or {}),
            "request_rate": rate,
            "burstiness": 1.0,
            "max_concurrency": None,
            "duration": duration,
            "completed": completed,
            "failed": 0,
            "total_input_tokens": prompt * completed,
            "total_output_tokens": out * completed,
            "request_throughput": completed / duration,
            "output_throughput": out * completed / duration,
            "total_token_throughput": (prompt + out) * completed / duration,
        }
        for name, lo, hi in (("ttft", t50, t99), ("tpot", p50, p99)):
            run[f"median_{name}_ms"] = run[f"p50_{name}_ms"] = lo
            run[f"p90_{name}_ms"] = lo * (hi / lo) ** (1.2816 / 2.3263)
            run[f"p99_{name}_ms"] = hi
            run[f"mean_{name}_ms"] = lo * (hi / lo) ** (0.5 / 2.3263)
        e50, e99 = t50 + p50 * (out - 1), t99 + p99 * (out - 1)
        run["median_e2el_ms"] = run["p50_e2el_ms"] = e50
        run["p90_e2el_ms"] = e50 * (e99 / e50) ** (1.2816 / 2.3263)
        run["p99_e2el_ms"] = e99
        run["mean_e2el_ms"] = e50 * (e99 / e50) ** (0.5 / 2.3263)
        lines.append(json.dumps(run))
    return lines


def write(slug: str, name: str, lines: list[str]) -> None:
    folder = HERE / slug
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("\n".join(lines) + "\n")


def second_configuration(rng: random.Random) -> None:
    """support-chat-7b measured again with the server at `--max-num-seqs 512` (its config says
    256), labelled `--metadata max_num_seqs=512`: more requests share a batch, so it queues
    later (capacity 40 req/s, not 34) and each token comes a fifth slower. A sweep of its own
    (another configuration), and a row of its own in the planner's same-model table."""
    model, base, _, _, ttft, tpot, prompt, out = SERVICES["support-chat-7b"]
    lines = rate_sweep(
        rng,
        model,
        base,
        40,
        [8, 16, 24, 32, 36],
        ttft,
        (tpot[0] * 1.2, tpot[1] * 1.2),
        prompt,
        out,
        day="20261105",
        metadata={"max_num_seqs": "512"},
    )
    write("support-chat-7b", "demo-support-chat-7b-rate-sweep-max_num_seqs-512.jsonl", lines)


def concurrency_sweep(rng: random.Random) -> None:
    """translate-mixtral: a closed-loop sweep (rate unlimited) around its baseline at c=48,
    where throughput flattens and end-to-end latency grows with the queue."""
    prompt, out, lines = 900, 700, []
    for i, c in enumerate([8, 16, 24, 32, 40, 48, 56, 64]):
        u = c / 48
        noise = [math.exp(rng.gauss(0, 0.05)) for _ in range(4)]
        t50, t99 = 420 * (0.3 + 0.7 * u**2) * noise[0], 1900 * (0.3 + 0.7 * u**2) * noise[1]
        p50, p99 = 24 * (0.55 + 0.45 * u) * noise[2], 33 * (0.55 + 0.45 * u) * noise[3]
        e50, e99 = t50 + p50 * (out - 1), t99 + p99 * (out - 1)
        qps = c / (e50 * 1.05 / 1000)
        completed = 400
        run = {
            "date": f"20261104-{9 + i:02d}0000",
            "backend": "openai-chat",
            "label": "demo concurrency sweep",
            "model_id": "mistralai/Mixtral-8x7B-Instruct-v0.1",
            "num_prompts": completed,
            "request_rate": "inf",
            "burstiness": 1.0,
            "max_concurrency": c,
            "duration": completed / qps,
            "completed": completed,
            "failed": 0,
            "total_input_tokens": prompt * completed,
            "total_output_tokens": out * completed,
            "request_throughput": qps,
            "output_throughput": qps * out,
            "total_token_throughput": qps * (prompt + out),
        }
        for name, lo, hi in (("ttft", t50, t99), ("tpot", p50, p99), ("e2el", e50, e99)):
            run[f"median_{name}_ms"] = run[f"p50_{name}_ms"] = lo
            run[f"p90_{name}_ms"] = lo * (hi / lo) ** (1.2816 / 2.3263)
            run[f"p99_{name}_ms"] = hi
            run[f"mean_{name}_ms"] = lo * (hi / lo) ** (0.5 / 2.3263)
        lines.append(json.dumps(run))
    folder = HERE / "translate-mixtral"
    folder.mkdir(exist_ok=True)
    (folder / "demo-mixtral-concurrency-sweep.jsonl").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
