"""The simulated vLLM V1 engine: real cumulative histograms and counters, the per-request rows
that agree with them, and the `Slowdown` that injects a P99 regression (see `demo.simulator`)."""

from __future__ import annotations

import bisect
import logging
import math
import random
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from demo.engine_profile import (
    KV_CAPACITY_TOKENS,
    MAX_NUM_SEQS,
    PROMPT_SIGMA,
    EngineProfile,
    anticorrelated,
    daily_load,
)
from demo.simulator.expositions import TRITON_TOKEN_BUCKETS, WRITERS, bucket_layout, check_engine

log = logging.getLogger("demo.simulator")  # the name it had as one module


def rfc3339(moment: datetime) -> str:
    """As the agent writes times: UTC, millisecond precision, `Z` suffix."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# vLLM V1's own bucket edges (vllm/v1/metrics/loggers.py), as in the fixtures.
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5,
                5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0)  # fmt: skip
ITL_BUCKETS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0,
               7.5, 10.0, 20.0, 40.0, 80.0)  # fmt: skip
REQUEST_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0,
                   60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0)  # fmt: skip


def _one_two_five(limit: int) -> tuple[float, ...]:
    """vLLM's token-count buckets (`build_1_2_5_buckets(max_model_len)`): 1, 2, 5, 10, 20...
    up to the model's window."""
    edges, scale = [], 1
    while True:
        for step in (1, 2, 5):
            if step * scale > limit:
                return tuple(float(e) for e in edges)
            edges.append(step * scale)
        scale *= 10


DEFAULT_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
ERROR_RATE = 0.002
MAX_STEP_S = 300.0  # after a long pause (laptop asleep) simulate at most this much traffic
MAX_PROMPT_TOKENS = 32768  # a long-context model's window: rare enough not to bend the mean
PROMPT_TTFT_CORRELATION = 0.5  # longer prompts take longer to prefill
# Latency stretch per unit of rate above the mean: the afternoon peak (~1.46x the mean rate)
# is ~1.09x slower, so a profile's P99 at the mean rate says what the SLO sees at the peak.
PRESSURE_SLOPE = 0.2
ITL_JITTER = 0.12  # token-to-token spread around a request's own decode step time
# vLLM's per-request prompt and generation token histograms, for a model of this window.
TOKEN_BUCKETS = _one_two_five(MAX_PROMPT_TOKENS)


@dataclass
class Slowdown:
    """`share` of requests finishing in `[start, end)` are `factor` times slower (queue,
    prefill and decode). Times are the simulator clock's (epoch seconds)."""

    factor: float = 1.0
    share: float = 0.0
    start: float = -math.inf
    end: float = math.inf

    @property
    def active(self) -> bool:
        return self.factor != 1.0 and self.share > 0.0

    def covers(self, t: float) -> bool:
        return self.active and self.start <= t < self.end


class Histogram:
    """A Prometheus classic histogram: per-bucket counts, rendered cumulative."""

    def __init__(self, edges: tuple[float, ...]) -> None:
        self.edges = edges
        self.counts = [0] * (len(edges) + 1)  # the last one is +Inf
        self.sum = 0.0
        self.count = 0

    def observe(self, value: float) -> None:
        self.counts[bisect.bisect_left(self.edges, value)] += 1  # `le` is inclusive
        self.sum += value
        self.count += 1

    def render(self, name: str, labels: str) -> list[str]:
        own = f"{{{labels}}}" if labels else ""  # TGI's series carry no labels
        lines = [f"{name}_sum{own} {_num(self.sum)}"]
        running = 0
        for edge, count in zip((*self.edges, math.inf), self.counts, strict=True):
            running += count
            le = "+Inf" if edge == math.inf else repr(float(edge))
            lines.append(
                f'{name}_bucket{{{labels + "," if labels else ""}le="{le}"}} {_num(running)}'
            )
        lines.append(f"{name}_count{own} {_num(self.count)}")
        return lines


class FakeVllmEngine:
    """One serving engine, vLLM V1 by default: Poisson arrivals at a QPS that drifts over the
    day. `engine` ("tgi", "sglang", "triton") writes the same traffic in that engine's own
    families and bucket edges (`demo.simulator.expositions`)."""

    def __init__(
        self,
        service: str,
        *,
        qps: float = 12.0,
        profile: EngineProfile | None = None,
        model_name: str = DEFAULT_MODEL,
        rng: random.Random,
        start: float,
        phase_s: float = 0.0,
        engine: str = "vllm",
    ) -> None:
        self.service = service
        self.engine = check_engine(engine)
        edges = bucket_layout(engine, MAX_PROMPT_TOKENS)
        self.profile = profile or EngineProfile()
        self.base_qps = self.profile.qps or qps
        self._ttft_sigma = self.profile.ttft_sigma
        self._tpot_sigma = self.profile.tpot_sigma
        self._output_sigma = self.profile.output_sigma
        self._output_mu = self.profile.output_mu
        self._length_step = self.profile.length_step_correlation
        self._prompt_mu = self.profile.prompt_mu
        self.max_tokens = self.profile.max_tokens
        self.model_name = model_name
        self.rng = rng
        self.created = float(int(start))
        self.phase_s = phase_s
        self.slowdown = Slowdown()
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.success = {"stop": 0, "length": 0, "error": 0}
        self.ttft = Histogram(edges.get("ttft", TTFT_BUCKETS))
        self.itl = Histogram(edges.get("itl", ITL_BUCKETS))
        self.e2e = Histogram(edges.get("e2e", REQUEST_BUCKETS))
        self.queue = Histogram(edges.get("queue", REQUEST_BUCKETS))
        # vLLM 0.11+: per-request TPOT beside the per-gap ITL, and the engine-side phases.
        self.tpot = Histogram(edges.get("tpot", ITL_BUCKETS))
        self.prefill = Histogram(edges.get("prefill", REQUEST_BUCKETS))
        self.decode = Histogram(edges.get("decode", REQUEST_BUCKETS))
        # vLLM 0.32: each request's prompt and answer length, observed as it finishes (the
        # requests and tokens the counters above hold), and running requests preempted.
        self.request_prompt = Histogram(edges.get("prompt", TOKEN_BUCKETS))
        self.request_generation = Histogram(edges.get("generation", TOKEN_BUCKETS))
        # Triton's TensorRT-LLM backend observes failed requests' tokens too.
        self.triton_prompt = Histogram(TRITON_TOKEN_BUCKETS)
        self.triton_generation = Histogram(TRITON_TOKEN_BUCKETS)
        self.preemptions = 0
        # Its own stream: the draws of every other figure stay what they were.
        self._preempt_rng = random.Random(f"{service}:preemptions")
        self.running = 0
        self.waiting = 0
        self.kv_usage = 0.0
        self._last = start
        self._finished: list[dict[str, Any]] = []

    def qps_at(self, t: float) -> float:
        """Busier in the (UTC) afternoon, quieter at night, with a slower 10-minute ripple."""
        return self.base_qps * daily_load(t + self.phase_s, self.profile.swing)

    def load_at(self, t: float) -> float:
        """This engine's traffic against its mean rate (1.0 at the mean)."""
        return self.qps_at(t) / self.base_qps

    def advance(self, now: float) -> None:
        """Simulate the requests that finished since the last call."""
        start = max(self._last, now - MAX_STEP_S)
        span = now - start
        self._last = max(self._last, now)
        if span <= 0:
            return
        qps = self.qps_at(start + span / 2)
        arrivals = _poisson(self.rng, qps * span)
        finished = sorted(start + self.rng.random() * span for _ in range(arrivals))
        e2e_total = queue_total = tokens_total = 0.0
        for finish in finished:
            record = self._one_request(finish, qps)
            e2e_total += record["e2e_ms"] / 1000.0
            queue_total += record["queue_ms"] / 1000.0
            tokens_total += record["prompt_tokens"] + record["output_tokens"] / 2
            self._finished.append(record)
        # Little's law: in flight = arrival rate x time in system.
        if arrivals:
            in_flight = qps * e2e_total / arrivals
            self.running = min(MAX_NUM_SEQS, round(in_flight))
            self.waiting = max(0, round(in_flight) - MAX_NUM_SEQS) + round(
                qps * queue_total / arrivals
            )
            self.kv_usage = min(1.0, self.running * (tokens_total / arrivals) / KV_CAPACITY_TOKENS)
        else:
            self.running = self.waiting = 0
            self.kv_usage = 0.0

    def _one_request(self, finish: float, qps: float) -> dict[str, Any]:
        rng, profile = self.rng, self.profile
        slow = self.slowdown.covers(finish) and rng.random() < self.slowdown.share
        factor = self.slowdown.factor if slow else 1.0
        # Busier than the mean means longer queues and slower decode steps (bigger batches).
        pressure = 1.0 + PRESSURE_SLOPE * max(0.0, qps / self.base_qps - 1.0)
        z_prompt, z_own = rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0)
        prompt_tokens = round(
            min(MAX_PROMPT_TOKENS, max(16, math.exp(self._prompt_mu + PROMPT_SIGMA * z_prompt)))
        )
        # TTFT is log-normal through the profile's P50 and P99 (still standard normal after
        # mixing in the prompt's draw). The slow tail is mostly waiting, so the queue's share
        # of it grows with the request's own draw.
        rho = PROMPT_TTFT_CORRELATION
        z = rho * z_prompt + math.sqrt(1.0 - rho * rho) * z_own
        z_length, z_step = anticorrelated(
            z, rng.gauss(0.0, 1.0), rng.gauss(0.0, 1.0), self._length_step
        )
        output_tokens = round(max(2, math.exp(self._output_mu + self._output_sigma * z_length)))
        reason = "stop"
        if output_tokens >= self.max_tokens:
            output_tokens, reason = self.max_tokens, "length"
        ttft_base_s = profile.ttft_p50_ms / 1000.0 * math.exp(self._ttft_sigma * z)
        queue_share = min(0.9, 0.1 * math.exp(z_own))
        queue_s = ttft_base_s * queue_share * pressure * factor
        prefill_s = ttft_base_s * (1.0 - queue_share) * factor
        ttft_s = queue_s + prefill_s
        # A request's TPOT is its mean decode step; each token jitters around it (mean 1).
        step_s = (
            profile.tpot_p50_ms / 1000.0
            * math.exp(self._tpot_sigma * z_step) * pressure * factor
        )  # fmt: skip
        jitter_mu = -(ITL_JITTER**2) / 2
        itls = [
            step_s * rng.lognormvariate(jitter_mu, ITL_JITTER) for _ in range(output_tokens - 1)
        ]
        decode_s = sum(itls)
        e2e_s = ttft_s + decode_s
        ok = rng.random() >= ERROR_RATE
        if profile.preemptions:  # a request may be evicted and recomputed, errored or not
            due = profile.expected_preemptions(1, qps / self.base_qps)
            self.preemptions += int(due) + (self._preempt_rng.random() < due % 1)
        if not ok:  # vLLM V1 counts an errored request under finished_reason="error"
            self.success["error"] += 1
        if self.engine == "triton":  # a final response, failed or not
            self.triton_prompt.observe(prompt_tokens)
            self.triton_generation.observe(output_tokens if ok else 0)
        if ok:  # ...and observes latencies and tokens of the others only
            self.prompt_tokens += prompt_tokens
            self.generation_tokens += output_tokens
            self.success[reason] += 1
            self.ttft.observe(ttft_s)
            self.queue.observe(queue_s)
            self.e2e.observe(e2e_s)
            for itl in itls:
                self.itl.observe(itl)
            self.tpot.observe(decode_s / (output_tokens - 1))
            self.prefill.observe(prefill_s)
            self.decode.observe(decode_s)
            self.request_prompt.observe(prompt_tokens)
            self.request_generation.observe(output_tokens)
        return {
            "ts": rfc3339(datetime.fromtimestamp(finish, UTC)),
            "service": self.service,
            "ttft_ms": round(ttft_s * 1000.0, 3),
            "tpot_ms": round(decode_s / (output_tokens - 1) * 1000.0, 3),
            "e2e_ms": round(e2e_s * 1000.0, 3),
            "queue_ms": round(queue_s * 1000.0, 3),
            "prompt_tokens": prompt_tokens,
            "output_tokens": output_tokens,
            "ok": ok,
        }

    def take_requests(self, limit: int) -> list[dict[str, Any]]:
        """The requests finished since the last call; a uniform sample when over `limit`."""
        finished, self._finished = self._finished, []
        if len(finished) > limit:
            finished = sorted(self.rng.sample(finished, limit), key=lambda r: r["ts"])
        return finished

    def exposition(self) -> str:
        """`/metrics` as this engine writes it (vLLM V1 by default)."""
        if self.engine in WRITERS:
            return WRITERS[self.engine](self)
        labels = f'engine="0",model_name="{self.model_name}"'
        lines: list[str] = []

        def metric(name: str, kind: str, help_text: str, samples: list[str]) -> None:
            lines.append(f"# HELP {name} {help_text}")
            lines.append(f"# TYPE {name} {kind}")
            lines.extend(samples)

        for name, help_text, value in (
            ("num_requests_running", "Number of requests in model execution batches.",
             self.running),
            ("num_requests_waiting", "Number of requests waiting to be processed.", self.waiting),
            ("kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
             round(self.kv_usage, 4)),
        ):  # fmt: skip
            metric(f"vllm:{name}", "gauge", help_text, [f"vllm:{name}{{{labels}}} {_num(value)}"])
        for short, help_text, value in (
            ("prompt_tokens", "Number of prefill tokens processed.", self.prompt_tokens),
            ("generation_tokens", "Number of generation tokens processed.", self.generation_tokens),
        ):
            metric(f"vllm:{short}_total", "counter", help_text,
                   [f"vllm:{short}_total{{{labels}}} {_num(value)}"])  # fmt: skip
            metric(f"vllm:{short}_created", "gauge", help_text,
                   [f"vllm:{short}_created{{{labels}}} {_num(self.created)}"])  # fmt: skip
        metric("vllm:num_preemptions_total", "counter",
               "Cumulative number of preemption from the engine.",
               [f"vllm:num_preemptions_total{{{labels}}} {_num(self.preemptions)}"])  # fmt: skip
        metric("vllm:num_preemptions_created", "gauge",
               "Cumulative number of preemption from the engine.",
               [f"vllm:num_preemptions_created{{{labels}}} {_num(self.created)}"])  # fmt: skip
        metric(
            "vllm:request_success_total",
            "counter",
            "Count of successfully processed requests.",
            [
                f'vllm:request_success_total{{{labels},finished_reason="{reason}"}} {_num(count)}'
                for reason, count in self.success.items()
            ],
        )
        for name, help_text, histogram in (
            ("vllm:time_to_first_token_seconds",
             "Histogram of time to first token in seconds.", self.ttft),
            ("vllm:inter_token_latency_seconds",
             "Histogram of inter-token latency in seconds.", self.itl),
            ("vllm:e2e_request_latency_seconds",
             "Histogram of e2e request latency in seconds.", self.e2e),
            ("vllm:request_queue_time_seconds",
             "Histogram of time spent in WAITING phase for request.", self.queue),
            ("vllm:request_time_per_output_token_seconds",
             "Histogram of time_per_output_token_seconds per request.", self.tpot),
            ("vllm:request_prefill_time_seconds",
             "Histogram of time spent in PREFILL phase for request.", self.prefill),
            ("vllm:request_decode_time_seconds",
             "Histogram of time spent in DECODE phase for request.", self.decode),
            ("vllm:request_prompt_tokens", "Number of prefill tokens processed.",
             self.request_prompt),
            ("vllm:request_generation_tokens", "Number of generation tokens processed.",
             self.request_generation),
        ):  # fmt: skip
            metric(name, "histogram", help_text, histogram.render(name, labels))
        return "\n".join(lines) + "\n"


def _poisson(rng: random.Random, mean: float) -> int:
    if mean <= 0:
        return 0
    if mean > 50:  # normal approximation; exact enough for traffic
        return max(0, round(rng.gauss(mean, math.sqrt(mean))))
    threshold, k, p = math.exp(-mean), 0, 1.0
    while True:
        p *= rng.random()
        if p <= threshold:
            return k
        k += 1


def _num(value: float) -> str:
    """Prometheus client style: floats always with a fraction (`4000.0`)."""
    return repr(float(value))
