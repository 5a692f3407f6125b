"""Simulated H100s and a simulated serving engine (vLLM V1 by default; TGI, SGLang or Triton
with `engines`), for the demo and for tests.

The fake engine keeps real cumulative state: every simulated request is observed once into the
same histograms and counters vLLM V1 exposes (names, labels and bucket edges as in
`tests/fixtures/vllm/`), and also recorded as a per-request row for the batch's `requests`.
So counters only grow, histogram counts equal the success counter, and the rows agree with
the exposition.

Each engine follows an `EngineProfile` (`demo.engine_profile`): its request rate and the P50
(and optionally P99) of TTFT and TPOT, the P99 of end-to-end latency, the mean prompt and
answer lengths, how far the rate swings over the day, and optionally the GPUs' busy and
SM-active shares. Latencies are
log-normal through those targets and lengths log-normal around those means, so a demo service's
live figures agree with its dossier's baseline at the baseline's workload (`manage.py run_demo`
derives each profile from it, and the demo's seeded history follows the same curves:
`daily_load`, `EngineProfile.expected_kv_usage`, `gpu_shares`).

A "P99 regression" is injected with a `Slowdown`: a share of requests (default 10%) become
`factor` times slower, so the tail moves and the median barely does. It can start after a delay
(`slowdown_after`, seconds since start) and end after `slowdown_for` seconds, or be set at any
time (`Simulator.set_slowdown`).

One module a job: `engine` (the fake engine and its slowdown), `expositions` (its `/metrics`
as TGI, SGLang or Triton write it), `gpus` (the fake H100s),
`host` (the `Simulator` that steps both for one host). Everything is re-exported here.
"""

from demo.simulator.engine import (
    DEFAULT_MODEL,
    ERROR_RATE,
    ITL_BUCKETS,
    ITL_JITTER,
    MAX_PROMPT_TOKENS,
    MAX_STEP_S,
    PRESSURE_SLOPE,
    PROMPT_TTFT_CORRELATION,
    REQUEST_BUCKETS,
    TTFT_BUCKETS,
    FakeVllmEngine,
    Histogram,
    Slowdown,
    rfc3339,
)
from demo.simulator.gpus import H100_MEMORY_BYTES, H100_NAME, PEAK_LOAD, FakeGpus
from demo.simulator.host import Simulator

__all__ = [
    "DEFAULT_MODEL",
    "ERROR_RATE",
    "H100_MEMORY_BYTES",
    "H100_NAME",
    "ITL_BUCKETS",
    "ITL_JITTER",
    "MAX_PROMPT_TOKENS",
    "MAX_STEP_S",
    "PEAK_LOAD",
    "PRESSURE_SLOPE",
    "PROMPT_TTFT_CORRELATION",
    "REQUEST_BUCKETS",
    "TTFT_BUCKETS",
    "FakeGpus",
    "FakeVllmEngine",
    "Histogram",
    "Simulator",
    "Slowdown",
    "rfc3339",
]
