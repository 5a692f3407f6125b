"""What a simulated engine serves: its profile (rate, latency percentiles, lengths, GPU shares)
and the curves the demo's live engine and its seeded history both follow (`daily_load`,
`gpu_shares`, `EngineProfile.expected_kv_usage`), so live data continues the history without a
step. `demo.simulator` runs engines from these profiles."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, fields
from functools import cache, cached_property

MAX_NUM_SEQS = 256  # vLLM's default batch cap: beyond it requests wait
KV_CAPACITY_TOKENS = 250_000
Z99 = 2.3263  # the standard normal's 99th percentile: a log-normal's P99 is P50 * exp(Z99 * sigma)
PROMPT_SIGMA = 0.5  # spread of prompt lengths (log-normal)
RIPPLE_SHARE = 0.08 / 0.35  # the 10-minute ripple against the daily swing
MAX_PREEMPTIONS = 1.0  # per finished request: beyond it an engine is thrashing, not serving


class ProfileError(ValueError):
    """A profile that cannot be simulated (a value not above 0, a P99 not above its P50...);
    the message names the key."""


@dataclass(frozen=True)
class EngineProfile:
    """What one simulated engine serves at its mean load. Times in ms, lengths in tokens.

    Latencies are log-normal through each P50 and P99 (a missing P99 takes a typical spread).
    `prompt_tokens` and `output_tokens` are the *means* per request (what a load test reports
    and the engine's token counters divide to), not the medians of the draws.
    `e2e_p99_ms` sets how much answer lengths vary, so the end-to-end tail lands near it;
    without it answers vary as in production chat. `qps` None means the simulator's rate.
    `swing`: the daily drift's amplitude (0.35: the afternoon is ~1.35x the mean rate).
    Busier than the mean stretches queueing and decode, as on a real engine. `gpu_util` and
    `sm_active` and `dram_active` (0-1, at the mean rate): the GPUs' shares; without them, a
    typical memory-bound decode (GPU-Util high, SM active about a third of it).
    `preemptions`: running requests the engine evicts for KV-cache room, per finished request
    at the mean rate (more when busier); 0, a KV cache with room to spare, by default.
    """

    qps: float | None = None
    ttft_p50_ms: float = 200.0
    ttft_p99_ms: float | None = None
    tpot_p50_ms: float = 30.0
    tpot_p99_ms: float | None = None
    e2e_p99_ms: float | None = None
    prompt_tokens: float = 900.0
    output_tokens: float = 190.0
    swing: float = 0.35
    gpu_util: float | None = None
    sm_active: float | None = None
    dram_active: float | None = None
    preemptions: float = 0.0

    DEFAULT_TTFT_SPREAD = 3.0  # P99 / P50 when no P99 is given
    DEFAULT_TPOT_SPREAD = math.exp(Z99 * 0.15)
    DEFAULT_OUTPUT_SIGMA = 0.6

    def __post_init__(self) -> None:
        for name in ("ttft_p50_ms", "tpot_p50_ms", "prompt_tokens", "output_tokens"):
            if not getattr(self, name) > 0:
                raise ProfileError(f"{name}: must be more than 0, got {getattr(self, name)!r}")
        if self.qps is not None and not self.qps > 0:
            raise ProfileError(f"qps: must be more than 0, got {self.qps!r}")
        if not 0 <= self.swing < 0.9:
            raise ProfileError(f"swing: must be from 0 to 0.9, got {self.swing!r}")
        for name in ("gpu_util", "sm_active", "dram_active"):
            value = getattr(self, name)
            if value is not None and not 0 < value <= 1:
                raise ProfileError(f"{name}: must be above 0 and at most 1, got {value!r}")
        if not 0 <= self.preemptions <= MAX_PREEMPTIONS:
            raise ProfileError(
                f"preemptions: must be from 0 to {MAX_PREEMPTIONS:g} a request, "
                f"got {self.preemptions!r}"
            )
        if self.output_tokens < 2:
            raise ProfileError("output_tokens: at least 2 (TPOT needs a second token)")
        for metric in ("ttft", "tpot"):
            p50, p99 = getattr(self, f"{metric}_p50_ms"), getattr(self, f"{metric}_p99_ms")
            if p99 is not None and not p99 > p50:
                raise ProfileError(f"{metric}_p99_ms: must be above {metric}_p50_ms ({p50:g})")
        if self.e2e_p99_ms is not None and not self.e2e_p99_ms > self.e2e_p50_ms:
            raise ProfileError(
                f"e2e_p99_ms: must be above the end-to-end P50 the profile implies "
                f"(ttft_p50_ms + output_tokens x tpot_p50_ms = {self.e2e_p50_ms:.0f} ms)"
            )

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))

    @classmethod
    def parse(cls, text: str) -> EngineProfile:
        """`key=value,key=value` (keys as the fields), e.g. `ttft_p50_ms=85,qps=24`."""
        values: dict[str, float] = {}
        for item in filter(None, (part.strip() for part in text.split(","))):
            key, sep, value = item.partition("=")
            key = key.strip().replace("-", "_")
            if not sep or key not in cls.field_names():
                raise ProfileError(
                    f"{item!r}: expected KEY=VALUE with KEY one of {', '.join(cls.field_names())}"
                )
            try:
                values[key] = float(value)
            except ValueError:
                raise ProfileError(f"{key}: expected a number, got {value.strip()!r}") from None
            if not math.isfinite(values[key]):
                raise ProfileError(f"{key}: expected a finite number, got {value.strip()!r}")
        return cls(**values)

    def spec(self) -> str:
        """The `key=value,...` text `parse` reads back (only the values that differ)."""
        default = EngineProfile()
        return ",".join(
            f"{name}={getattr(self, name):g}"
            for name in self.field_names()
            if getattr(self, name) is not None and getattr(self, name) != getattr(default, name)
        )

    @property
    def e2e_p50_ms(self) -> float:
        """About the median end-to-end latency: first token, then the rest at the TPOT P50."""
        return self.ttft_p50_ms + (self.output_tokens - 1) * self.tpot_p50_ms

    @property
    def ttft_sigma(self) -> float:
        if self.ttft_p99_ms is None:
            return math.log(self.DEFAULT_TTFT_SPREAD) / Z99
        return math.log(self.ttft_p99_ms / self.ttft_p50_ms) / Z99

    @property
    def tpot_sigma(self) -> float:
        if self.tpot_p99_ms is None:
            return math.log(self.DEFAULT_TPOT_SPREAD) / Z99
        return math.log(self.tpot_p99_ms / self.tpot_p50_ms) / Z99

    @property
    def max_tokens(self) -> int:
        """Where answers stop with reason "length": one in 20 as in chat traffic (190 -> 512
        by default), or beyond the 99.5th percentile when `e2e_p99_ms` is calibrated on the
        uncut tail."""
        return self._max_tokens(self.output_sigma)

    def _max_tokens(self, sigma: float) -> int:
        z = 1.6449 if self.e2e_p99_ms is None else 2.5758
        return max(2, round(self.output_tokens * math.exp(z * sigma)))

    @property
    def prompt_mu(self) -> float:
        """The log-mean of prompt lengths whose mean is `prompt_tokens` (a log-normal's mean is
        its median x exp(sigma^2 / 2))."""
        return math.log(self.prompt_tokens) - PROMPT_SIGMA**2 / 2

    @property
    def output_mu(self) -> float:
        return self._output_mu(self.output_sigma)

    def _output_mu(self, sigma: float) -> float:
        """The log-mean of answer lengths whose mean, once cut at the length limit, is
        `output_tokens` (bisection on the cut log-normal's mean)."""
        cut = self._max_tokens(sigma)
        low, high = math.log(self.output_tokens) - 4 * sigma - 1, math.log(self.output_tokens)
        for _ in range(50):
            mu = (low + high) / 2
            if _capped_lognormal_mean(mu, sigma, cut) < self.output_tokens:
                low = mu
            else:
                high = mu
        return (low + high) / 2

    @property
    def output_sigma(self) -> float:
        return self._length_shape[0]

    @property
    def length_step_correlation(self) -> float:
        """How strongly a slow first token goes with a faster decode step (0 = independent;
        see `_anticorrelated`)."""
        return self._length_shape[1]

    @cached_property
    def _length_shape(self) -> tuple[float, float]:
        """The spread of answer lengths, and their correlation with the decode step, that put
        the end-to-end P99 near `e2e_p99_ms`.

        End-to-end is first token plus answer length x decode step, each log-normal; no closed
        form gives the sum's P99, so it is found by bisection over a fixed sample of draws (the
        same each time: the search is smooth and the result repeatable). When even equal-length
        answers overshoot (a baseline whose TTFT P99 plus a typical decode exceeds its end-to-end
        P99), a slow first token goes with faster decode steps, as far as the target needs.
        """
        if self.e2e_p99_ms is None:
            return self.DEFAULT_OUTPUT_SIGMA, 0.0
        target = self.e2e_p99_ms
        low, high = 0.05, 2.0
        if self._e2e_p99(low, 0.0) < target:
            for _ in range(30):
                mid = (low + high) / 2
                low, high = (mid, high) if self._e2e_p99(mid, 0.0) < target else (low, mid)
            return (low + high) / 2, 0.0
        sigma = low
        low, high = 0.0, 0.95
        for _ in range(30):
            mid = (low + high) / 2
            low, high = (mid, high) if self._e2e_p99(sigma, mid) > target else (low, mid)
        return sigma, (low + high) / 2

    def _e2e_p99(self, sigma: float, k: float) -> float:
        mu, cut = self._output_mu(sigma), self._max_tokens(sigma)
        ttft, tpot = self.ttft_p50_ms, self.tpot_p50_ms
        values = []
        for z_first, z2, z3 in _calibration_draws():
            z_length, z_step = anticorrelated(z_first, z2, z3, k)
            length = min(cut, max(2, math.exp(mu + sigma * z_length)))
            step = tpot * math.exp(self.tpot_sigma * z_step)
            values.append(ttft * math.exp(self.ttft_sigma * z_first) + (length - 1) * step)
        values.sort()
        return values[int(0.99 * len(values))]

    def expected_in_flight(self, qps: float) -> float:
        """Requests running at `qps` (Little's law: arrival rate x mean time in the engine), as
        the simulated engine's gauge hovers around."""
        ttft_s = self.ttft_p50_ms / 1000.0 * math.exp(self.ttft_sigma**2 / 2)
        tpot_s = self.tpot_p50_ms / 1000.0 * math.exp(self.tpot_sigma**2 / 2)
        return min(MAX_NUM_SEQS, qps * (ttft_s + (self.output_tokens - 1) * tpot_s))

    def expected_preemptions(self, requests: float, load: float) -> float:
        """Preemptions expected over `requests` finished at `load` (1.0 = the mean rate): a
        fuller batch at a busier hour runs out of KV blocks more often."""
        return self.preemptions * load * requests

    def expected_kv_usage(self, qps: float) -> float:
        """The KV cache's expected share in use at `qps`: requests in flight x the tokens each
        holds on average (its prompt and half its answer)."""
        in_flight = self.expected_in_flight(qps)
        return min(
            1.0, in_flight * (self.prompt_tokens + self.output_tokens / 2) / KV_CAPACITY_TOKENS
        )


def daily_load(t: float, swing: float) -> float:
    """The rate at epoch second `t` against the mean: a daily sine of amplitude `swing` (peak in
    the UTC afternoon, trough at night) times a 10-minute ripple of 0.23 x `swing`. The demo's
    seeded history draws the same curve, so live data continues it without a step."""
    daily = 1.0 + swing * math.sin(2 * math.pi * ((t / 86400.0) - 0.35))
    ripple = 1.0 + swing * RIPPLE_SHARE * math.sin(2 * math.pi * t / 600.0)
    return daily * ripple


def gpu_shares(*shares: float, load: float) -> tuple[float, ...]:
    """Each share (GPU-Util, SM active, DRAM active...) at `load` (1.0 = the mean rate) for
    GPUs that are that busy at the mean: they move a little with traffic (a fixed part is the
    engine's own loop, busy whatever the load)."""
    scale = 0.85 + 0.15 * load
    return tuple(min(1.0, share * scale) for share in shares)


# GPU memory in use: vLLM reserves `gpu_memory_utilization` (0.9) of it up front for weights
# and the KV cache, whatever the traffic.
GPU_MEMORY_RESERVED = 0.9


def anticorrelated(z_first: float, z2: float, z3: float, k: float) -> tuple[float, float]:
    """Standard normal draws for an answer's length and its decode step: with `k` > 0, a slow
    first token goes with faster decode steps (a request that queued long is decoded in a
    thinner batch). Each stays standard normal, so every marginal percentile stays where the
    profile puts it; only the end-to-end tail, their sum's, gets shorter."""
    return z2, math.sqrt(1.0 - k * k) * z3 - k * z_first


@cache
def _calibration_draws() -> tuple[tuple[float, float, float], ...]:
    rng = random.Random(20261201)
    return tuple((rng.gauss(0, 1), rng.gauss(0, 1), rng.gauss(0, 1)) for _ in range(4000))


def _capped_lognormal_mean(mu: float, sigma: float, cap: float) -> float:
    """E[min(X, cap)] for log-normal X: the part below the cap plus the cap times the rest."""
    z = (math.log(cap) - mu) / sigma
    below = math.exp(mu + sigma**2 / 2) * _phi(z - sigma)
    return below + cap * (1.0 - _phi(z))


def _phi(x: float) -> float:
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))
