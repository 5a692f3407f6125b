"""Proposes bottlenecks from the seed's symptom table (docs/method.md).

A proposal is a hypothesis with the numbers that triggered it, a suggested layer and kind (the
exact values of `dossiers.models.Bottleneck.Layer` / `.Kind`); it becomes a Bottleneck only when
an owner confirms it. Every rule needs its own inputs: a rule whose inputs are missing never fires.

Rules, in the order `diagnose` returns them:
  gpu_waiting        GPU utilization low while requests wait -> scheduling / queueing (queue
                     longer than the running batch) or scheduling / cpu
  long_tail          P99 far above P50, P50 normal -> scheduling / queueing
  busy_gpu_idle_sms  GPU-Util high but SM active low -> hardware / memory_bandwidth (DRAM busy),
                     model / cpu (DRAM idle: launch-bound), model / memory_bandwidth (no DRAM data)
  throughput_flat    throughput flat while the batch grows -> hardware / memory_bandwidth, or
                     scheduling / queueing when DRAM is idle (the batching policy caps the batch)
  memory_capacity    KV cache near full, requests preempted (vLLM: evicted for want of KV
                     blocks), or OOM errors -> framework / memory_capacity
  cold_start         latency high in the first minutes after a restart -> framework / cpu
  memory_creep       memory rising steadily over hours -> framework / memory_capacity
  front_of_engine    the client's TTFT P99 mostly spent before the engine saw the request (its
                     own histogram's P99 at most half of it) -> framework / cpu: the API
                     server and tokenizer, not the engine, are the bottleneck layer
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from itertools import pairwise

import numpy as np
from scipy import stats

from analysis.readable import measured, setting

LAYERS = frozenset({"scheduling", "framework", "model", "hardware"})
KINDS = frozenset(
    {"compute", "memory_bandwidth", "communication", "cpu", "io", "queueing", "memory_capacity"}
)

# gpu_waiting: the GPU is mostly idle (NVML util below this) while at least this many requests
# wait on average. When the queue outnumbers the running batch, the scheduler admits too few
# (batching policy: queueing); otherwise the GPU is starved by the CPU side (tokenizer, pre/post).
LOW_GPU_UTIL = 0.5
MIN_REQUESTS_WAITING = 1.0

# long_tail: P99 this many times P50 is a tail, not a distribution; P50 must be within the SLO
# (when one is given) for P50 to count as normal.
TAIL_RATIO = 4.0

# busy_gpu_idle_sms: NVML says busy, yet SMs are active less than this share of GPU-Util
# ("GPU-Util lies"). DRAM active at or above HIGH_DRAM_ACTIVE means memory-bound kernels
# (hardware); below LOW_DRAM_ACTIVE, neither SMs nor memory are busy: launch-bound (model
# execution: small kernels and launch gaps, a CPU-side cost fixed by CUDA graphs or fusion).
HIGH_GPU_UTIL = 0.8
SM_TO_GPU_UTIL_RATIO = 0.5
HIGH_DRAM_ACTIVE = 0.6
LOW_DRAM_ACTIVE = 0.3

# throughput_flat: a sweep step gaining less than this per doubling of batch/concurrency is flat.
# The seed's 16 -> 32 (+20%) is diminishing returns, not flat; flat is a wall.
FLAT_GAIN_PER_DOUBLING = 0.10

# memory_capacity: KV cache usage at or above this share is "near full". Preemptions are the
# engine running out of KV blocks (vLLM evicts a running request and recomputes it later), the
# direct evidence a mean usage can miss: at least this share of the finished requests (one in a
# hundred) is a KV cache too small for the load, not a one-off burst.
KV_CACHE_NEAR_FULL = 0.9
PREEMPTIONS_PER_REQUEST = 0.01

# cold_start: points before WARMUP_MINUTES are "just after restart", from STEADY_AFTER_MINUTES
# on are steady state (at least MIN_STEADY_POINTS of them); the worst early P99 above
# COLD_START_RATIO x the steady median fires. Cause is usually first-request compilation,
# CUDA-graph capture or lazy loading: suggested framework / cpu, fixed by a warm-up.
WARMUP_MINUTES = 5.0
STEADY_AFTER_MINUTES = 10.0
MIN_STEADY_POINTS = 3
COLD_START_RATIO = 2.0

# front_of_engine: the layer in front of the engine (HTTP server, tokenizer, gateway) takes at
# least this share of the client's TTFT P99. The engine's figure is bucket-bounded, so its
# bucket's upper edge is used: the gap is never overstated.
FRONT_OF_ENGINE_SHARE = 0.5

# memory_creep: a linear fit of used memory over time with R^2 at least MIN_R_SQUARED and a slope
# of at least MEMORY_GROWTH_PER_HOUR of the mean use, over at least MIN_CREEP_HOURS and
# MIN_CREEP_POINTS samples (a short test cannot find a leak).
MEMORY_GROWTH_PER_HOUR = 0.01
MIN_R_SQUARED = 0.8
MIN_CREEP_HOURS = 2.0
MIN_CREEP_POINTS = 4

_RATIOS = ("gpu_util", "sm_active", "dram_active", "kv_cache_usage")
_NON_NEGATIVE = (
    "requests_waiting",
    "requests_running",
    "e2e_p50_ms",
    "e2e_p99_ms",
    "ttft_p99_ms",
    "engine_ttft_p99_ms",
    "e2e_slo_ms",
    "preemptions",
    "finished_requests",
    "finished_counting_preemptions",
)
_SERIES = ("sweep", "latency_since_restart", "memory_over_time")


@dataclass(frozen=True)
class Observation:
    """What is known about a baseline or a time window; every field may be missing (None)."""

    gpu_util: float | None = None  # ratios 0-1
    sm_active: float | None = None
    dram_active: float | None = None
    requests_waiting: float | None = None  # means over the window
    requests_running: float | None = None
    e2e_p50_ms: float | None = None
    e2e_p99_ms: float | None = None
    ttft_p99_ms: float | None = None  # client-side (as the load generator measured it)
    # The engine's TTFT P99 over the same requests (server-side), at most this (bucket's edge).
    engine_ttft_p99_ms: float | None = None
    e2e_slo_ms: float | None = None  # the service's e2e P99 SLO: a P50 above it is not "normal"
    kv_cache_usage: float | None = None  # 0-1
    # Running requests evicted for KV room, over the window; None when no engine counted them
    # (an engine without the counter is not an engine that preempted none).
    preemptions: float | None = None
    finished_requests: float | None = None  # requests finished in any way, over the window
    # The part of finished_requests where preemptions were counted (their share's denominator);
    # below it when some hosts' engines do not count them. None: all of finished_requests.
    finished_counting_preemptions: float | None = None
    oom_errors: int | None = None
    sweep: Sequence[tuple[float, float]] | None = None  # (batch or concurrency, throughput)
    latency_since_restart: Sequence[tuple[float, float]] | None = None  # (minutes, p99 ms)
    memory_over_time: Sequence[tuple[float, float]] | None = None  # (hours, used bytes)

    @classmethod
    def from_mapping(cls, values: Mapping[str, object]) -> Observation:
        """Build from e.g. a run record's values; keys that are not fields are ignored."""
        return cls(**{f.name: values[f.name] for f in fields(cls) if f.name in values})

    def __post_init__(self) -> None:
        for name in _RATIOS:
            value = getattr(self, name)
            if value is not None:
                _check_number(name, value)
                if not 0 <= value <= 1:
                    raise ValueError(f"{name} must be a ratio between 0 and 1 (got {value!r})")
        for name in _NON_NEGATIVE:
            value = getattr(self, name)
            if value is not None:
                _check_number(name, value)
                if value < 0:
                    raise ValueError(f"{name} must not be negative (got {value!r})")
        if self.oom_errors is not None and (
            isinstance(self.oom_errors, bool)
            or not isinstance(self.oom_errors, int)
            or self.oom_errors < 0
        ):
            raise ValueError(f"oom_errors must be a count >= 0 (got {self.oom_errors!r})")
        for name in _SERIES:
            series = getattr(self, name)
            if series is not None:
                object.__setattr__(self, name, _clean_series(name, series))


@dataclass(frozen=True)
class Proposal:
    rule: str
    title: str
    layer: str  # dossiers.models.Bottleneck.Layer value
    kind: str  # dossiers.models.Bottleneck.Kind value
    symptom: str
    evidence: str  # the numbers that triggered the rule

    def to_dict(self) -> dict:
        return asdict(self)


def diagnose(obs: Observation) -> list[Proposal]:
    """Every rule that fires on `obs`, in the module docstring's order."""
    rules = (
        _gpu_waiting,
        _long_tail,
        _busy_gpu_idle_sms,
        _throughput_flat,
        _memory_capacity,
        _cold_start,
        _memory_creep,
        _front_of_engine,
    )
    return [p for rule in rules if (p := rule(obs)) is not None]


# --- Rules ----------------------------------------------------------------------------------


def _gpu_waiting(obs: Observation) -> Proposal | None:
    if obs.gpu_util is None or obs.requests_waiting is None:
        return None
    if obs.gpu_util >= LOW_GPU_UTIL or obs.requests_waiting < MIN_REQUESTS_WAITING:
        return None
    evidence = [
        f"GPU utilization {_pct(obs.gpu_util)} (< {_pct(LOW_GPU_UTIL)})",
        f"{_count(obs.requests_waiting)} requests waiting on average",
    ]
    if obs.requests_running is not None:
        evidence.append(f"{_count(obs.requests_running)} running")
    if obs.ttft_p99_ms is not None:
        evidence.append(f"TTFT P99 {measured(obs.ttft_p99_ms)} ms")
    small_batches = obs.requests_running is not None and obs.requests_waiting > obs.requests_running
    if small_batches:
        title = "Batches too small: requests queue while the GPU idles"
        kind = "queueing"
    else:
        title = "GPU waiting on the CPU side (tokenization, pre/post-processing, IO)"
        kind = "cpu"
    return Proposal(
        rule="gpu_waiting",
        title=title,
        layer="scheduling",
        kind=kind,
        symptom="low GPU utilization while requests wait",
        evidence="; ".join(evidence),
    )


def _long_tail(obs: Observation) -> Proposal | None:
    p50, p99 = obs.e2e_p50_ms, obs.e2e_p99_ms
    if p50 is None or p99 is None or p50 <= 0:
        return None
    if obs.e2e_slo_ms is not None and p50 > obs.e2e_slo_ms:
        return None  # P50 itself is slow: not a tail problem
    ratio = p99 / p50
    if ratio <= TAIL_RATIO:
        return None
    evidence = (
        f"e2e P99 {measured(p99)} ms is {ratio:.1f}x P50 {measured(p50)} ms (> {TAIL_RATIO:g}x)"
    )
    if obs.e2e_slo_ms is not None:
        evidence += f"; P50 within the {setting(obs.e2e_slo_ms)} ms SLO"
    return Proposal(
        rule="long_tail",
        title="Long requests blocking short ones (or GC / fragmentation pauses)",
        layer="scheduling",
        kind="queueing",
        symptom="P99 high, P50 normal",
        evidence=evidence,
    )


def _busy_gpu_idle_sms(obs: Observation) -> Proposal | None:
    if obs.gpu_util is None or obs.sm_active is None:
        return None
    if obs.gpu_util < HIGH_GPU_UTIL or obs.sm_active >= SM_TO_GPU_UTIL_RATIO * obs.gpu_util:
        return None
    evidence = f"GPU-Util {_pct(obs.gpu_util)} but SM active {_pct(obs.sm_active)}"
    dram = obs.dram_active
    if dram is not None:
        evidence += f"; DRAM active {_pct(dram)}"
    if dram is not None and dram >= HIGH_DRAM_ACTIVE:
        title, layer, kind = "Memory-bound kernels", "hardware", "memory_bandwidth"
    elif dram is not None and dram < LOW_DRAM_ACTIVE:
        # Neither SMs nor memory are busy: the time goes to launching kernels.
        title, layer, kind = "Launch-bound: small kernels and launch gaps", "model", "cpu"
    else:
        title, layer, kind = "Memory- or launch-bound kernels", "model", "memory_bandwidth"
    return Proposal(
        rule="busy_gpu_idle_sms",
        title=title,
        layer=layer,
        kind=kind,
        symptom="GPU-Util high but SM active low",
        evidence=evidence,
    )


def _throughput_flat(obs: Observation) -> Proposal | None:
    sweep = obs.sweep
    if not sweep or len(sweep) < 2:
        return None
    # Walk back from the largest batch while each step is flat: the plateau's start.
    start = len(sweep) - 1
    while start > 0 and _gain_per_doubling(sweep[start - 1], sweep[start]) < FLAT_GAIN_PER_DOUBLING:
        start -= 1
    if start == len(sweep) - 1:
        return None  # the last step still grows
    (b0, t0), (b1, t1) = sweep[start], sweep[-1]
    gain = (t1 - t0) / t0 if t0 else 0.0
    evidence = (
        f"batch/concurrency {setting(b0)} -> {setting(b1)} ({b1 / b0:.1f}x): "
        f"throughput {measured(t0)} -> {measured(t1)} "
        f"({gain:+.0%}; < {FLAT_GAIN_PER_DOUBLING:.0%} per doubling)"
    )
    if obs.dram_active is not None:
        evidence += f"; DRAM active {_pct(obs.dram_active)}"
    if obs.dram_active is not None and obs.dram_active < LOW_DRAM_ACTIVE:
        # Memory is not busy, so the wall is more likely the batching policy capping the batch.
        title, layer, kind = "Batching policy caps the batch", "scheduling", "queueing"
    else:
        title, layer, kind = "Memory-bandwidth-bound decode", "hardware", "memory_bandwidth"
    return Proposal(
        rule="throughput_flat",
        title=title,
        layer=layer,
        kind=kind,
        symptom="throughput flat while the batch grows",
        evidence=evidence,
    )


def _memory_capacity(obs: Observation) -> Proposal | None:
    evidence = []
    if obs.kv_cache_usage is not None and obs.kv_cache_usage >= KV_CACHE_NEAR_FULL:
        evidence.append(f"KV cache {_pct(obs.kv_cache_usage)} used (>= {_pct(KV_CACHE_NEAR_FULL)})")
    if (share := _preemptions_share(obs)) is not None:
        over = _preemptions_over(obs)
        # Preemptions, not requests: vLLM counts each eviction, and one request can be evicted
        # more than once, so the share is per finished request, not a fraction of them.
        of = "" if not over else f" ({share:.0%} of {_count(over)} finished requests{_part(obs)})"
        noun = "preemption" if obs.preemptions == 1 else "preemptions"
        evidence.append(f"{_count(obs.preemptions)} {noun} for KV-cache room{of}")
    if obs.oom_errors:
        evidence.append(f"{obs.oom_errors} out-of-memory error{'s' if obs.oom_errors > 1 else ''}")
    if not evidence:
        return None
    return Proposal(
        rule="memory_capacity",
        title="KV cache or batch too large for GPU memory",
        layer="framework",
        kind="memory_capacity",
        symptom="KV cache near full, requests preempted, or OOM",
        evidence="; ".join(evidence),
    )


def _preemptions_share(obs: Observation) -> float | None:
    """Preemptions per finished request when they are many enough to fire (else None); with no
    finished request known, any preemption fires (its share reads as infinite)."""
    if not obs.preemptions:
        return None
    over = _preemptions_over(obs)
    if not over:
        return math.inf
    share = obs.preemptions / over
    return share if share >= PREEMPTIONS_PER_REQUEST else None


def _preemptions_over(obs: Observation) -> float | None:
    """The finished requests the preemptions are a share of: those where they were counted."""
    if obs.finished_counting_preemptions is not None:
        return obs.finished_counting_preemptions
    return obs.finished_requests


def _part(obs: Observation) -> str:
    """Where only part of the finished requests had their preemptions counted, how many not."""
    over, finished = obs.finished_counting_preemptions, obs.finished_requests
    if over is None or finished is None or finished - over < 0.5:
        return ""
    return f" counted; {_count(finished - over)} more finished where the engine does not count them"


def _cold_start(obs: Observation) -> Proposal | None:
    points = obs.latency_since_restart
    if not points:
        return None
    early = [p99 for minutes, p99 in points if minutes < WARMUP_MINUTES]
    steady = [p99 for minutes, p99 in points if minutes >= STEADY_AFTER_MINUTES]
    if not early or len(steady) < MIN_STEADY_POINTS:
        return None
    worst = max(early)
    typical = statistics.median(steady)
    if typical <= 0 or worst <= COLD_START_RATIO * typical:
        return None
    return Proposal(
        rule="cold_start",
        title="Cold start without warm-up",
        layer="framework",
        kind="cpu",
        symptom="latency high in the first minutes after a restart",
        evidence=(
            f"P99 {measured(worst)} ms in the first {WARMUP_MINUTES:g} min after restart vs "
            f"{measured(typical)} ms steady-state median ({worst / typical:.1f}x, "
            f"> {COLD_START_RATIO:g}x)"
        ),
    )


def _memory_creep(obs: Observation) -> Proposal | None:
    points = obs.memory_over_time
    if not points or len(points) < MIN_CREEP_POINTS:
        return None
    hours = np.array([h for h, _ in points])
    used = np.array([u for _, u in points])
    span = float(hours.max() - hours.min())
    if span < MIN_CREEP_HOURS or np.ptp(used) == 0:
        return None
    fit = stats.linregress(hours, used)
    r_squared = fit.rvalue**2
    mean_used = float(used.mean())
    growth = fit.slope / mean_used if mean_used > 0 else 0.0
    if fit.slope <= 0 or r_squared < MIN_R_SQUARED or growth < MEMORY_GROWTH_PER_HOUR:
        return None
    return Proposal(
        rule="memory_creep",
        title="Memory leak or fragmentation",
        layer="framework",
        kind="memory_capacity",
        symptom="memory rising steadily over hours",
        evidence=(
            f"used memory {_gb(used[0])} -> {_gb(used[-1])} over {setting(span)} h: "
            f"+{_gb(fit.slope)}/h ({growth:.1%} of the mean per hour, "
            f">= {MEMORY_GROWTH_PER_HOUR:.0%}), R² {r_squared:.2f}"
        ),
    )


# --- Helpers --------------------------------------------------------------------------------


def _front_of_engine(obs: Observation) -> Proposal | None:
    client, engine = obs.ttft_p99_ms, obs.engine_ttft_p99_ms
    if client is None or engine is None or client <= 0:
        return None
    gap = client - engine
    if gap < FRONT_OF_ENGINE_SHARE * client:
        return None
    return Proposal(
        rule="front_of_engine",
        title="API server and tokenizer: most of TTFT passes before the engine sees the request",
        layer="framework",
        kind="cpu",
        symptom="client TTFT far above the engine's own TTFT for the same requests",
        evidence=(
            f"client TTFT P99 {client:,.0f} ms, engine TTFT P99 at most {engine:,.0f} ms: "
            f"{gap:+,.0f} ms ({gap / client:.0%}) before the engine "
            f"(>= {FRONT_OF_ENGINE_SHARE:.0%})"
        ),
    )


def _gain_per_doubling(before: tuple[float, float], after: tuple[float, float]) -> float:
    """Throughput growth per doubling of batch between two sweep points (batches increasing)."""
    (b0, t0), (b1, t1) = before, after
    if t0 <= 0:
        return math.inf if t1 > 0 else 0.0
    doublings = math.log2(b1 / b0)
    return (t1 / t0) ** (1 / doublings) - 1


def _clean_series(name: str, series: Sequence[tuple[float, float]]) -> tuple:
    """Validated pairs of finite, non-negative numbers, sorted by their first element."""
    pairs = []
    for i, item in enumerate(series):
        try:
            x, y = item
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name}[{i}] must be a pair of numbers (got {item!r})") from exc
        _check_number(f"{name}[{i}][0]", x)
        _check_number(f"{name}[{i}][1]", y)
        if x < 0 or y < 0:
            raise ValueError(f"{name}[{i}] must not be negative (got {item!r})")
        pairs.append((float(x), float(y)))
    pairs.sort()
    for (x0, _), (x1, _) in pairwise(pairs):
        if x0 == x1:
            raise ValueError(f"{name} has two points at {x0:g}")
    if name == "sweep" and pairs and pairs[0][0] <= 0:
        raise ValueError("sweep batch/concurrency values must be positive")
    return tuple(pairs)


def _check_number(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number (got {value!r})")


def _count(mean: float) -> str:
    """A mean count of requests: "6", "6.3"."""
    return setting(mean) if float(mean).is_integer() else f"{mean:,.1f}"


def _pct(ratio: float) -> str:
    return f"{ratio * 100:.0f}%"


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.2f} GB"
