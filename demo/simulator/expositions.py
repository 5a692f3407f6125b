"""A simulated engine's `/metrics` in its own engine's families: vLLM, TGI, SGLang or Triton.

One simulated state (requests finished, tokens, preemptions, latency histograms, gauges) is
written the way each engine writes it, under the metric names PerfHub's own mapping tables read
(`collectors.exposition.engines.ENGINES`, the newest name of each canonical series, with the
engine's counter suffix), so the demo exercises every engine path and stays in step with the
tables. Labels and bucket edges are each engine's own, from the published scrapes in
`tests/fixtures/real/metrics/` (SOURCES.md there): vLLM V1's as before; TGI's router
(`tgi-datadog-payload-excerpt.prom`: durations 0.0001 x 1.5^i for i = 1..35, token lengths in
100 steps of the model's window / 100); SGLang's (`sglang-docs-production_metrics.prom`: the
end-to-end and TTFT edges; its TPOT edges also for the per-request TPOT and the ITL, whose
edges that scrape lacks); Triton with the TensorRT-LLM backend (`triton-trtllm-readme.prom`,
`written-here-triton-trtllm-0.19-token-histograms.prom`: token edges 10, 50, 100, 500, 1000).

What an engine does not export is not invented: TGI has no TTFT, ITL, KV-cache or preemption
metric; SGLang no prefill and decode phases; Triton only duration *sums* (its TTFT histogram
needs `--metrics-config histogram_latencies=true` and is left out) and no preemptions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from collectors.exposition.engines import ENGINES

if TYPE_CHECKING:
    from demo.simulator.engine import FakeVllmEngine

# The engines the simulator writes (a demo service on another engine is simulated as vLLM).
SIMULATED_ENGINES = ("vllm", "tgi", "sglang", "triton")

TGI_DURATION_BUCKETS = tuple(0.0001 * 1.5**i for i in range(1, 36))
SGLANG_E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0,
                      50.0, 60.0)  # fmt: skip
SGLANG_TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                       2.5, 5.0, 7.5, 10.0, 15.0, 20.0, 25.0, 30.0)  # fmt: skip
SGLANG_TOKEN_TIME_BUCKETS = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15,
                             0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)  # fmt: skip
SGLANG_QUEUE_BUCKETS = (0.0, 0.001, 0.005, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0,
                        10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0)  # fmt: skip
TRITON_TOKEN_BUCKETS = (10.0, 50.0, 100.0, 500.0, 1000.0)


def tgi_token_buckets(window: int) -> tuple[float, ...]:
    """TGI's token-length edges: the window in 100 equal steps (`i x window / 100`)."""
    return tuple(window / 100 * (i + 1) for i in range(100))


def family(engine: str, canonical: str) -> str:
    """The name PerfHub reads first for `canonical` from `engine` (its mapping table's newest
    name), so the simulator writes what the parser looks for."""
    rule = next(r for r in ENGINES[engine].rules if r.canonical == canonical and not r.adds)
    return rule.names[0]


def counter(engine: str, canonical: str) -> str:
    return family(engine, canonical) + ENGINES[engine].counter_suffix


def _num(value: float) -> str:
    return repr(float(value))


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def metric(self, name: str, kind: str, help_text: str, samples: list[str]) -> None:
        self.lines.append(f"# HELP {name} {help_text}")
        self.lines.append(f"# TYPE {name} {kind}")
        self.lines.extend(samples)

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def tgi(e: FakeVllmEngine) -> str:
    """TGI's router: success and failure counters without `_total`, the token totals as
    histogram sums, per-request durations, the batch and queue gauges."""
    w, t = _Writer(), "tgi"
    ok = e.success["stop"] + e.success["length"]
    name = counter(t, "requests_finished")
    w.metric(name, "counter", "", [f"{name} {_num(ok)}"])
    # A failed generation (HTTP 424) is the service's error; TGI labels it err="generation".
    name = counter(t, "request_errors")
    w.metric(name, "counter", "", [f'{name}{{err="generation"}} {_num(e.success["error"])}'])
    for canonical, value in (("requests_running", e.running), ("requests_waiting", e.waiting)):
        name = family(t, canonical)
        w.metric(name, "gauge", "", [f"{name} {_num(value)}"])
    for canonical, histogram in (
        ("prompt_tokens", e.request_prompt),
        ("generation_tokens", e.request_generation),
        ("tpot_seconds", e.tpot),
        ("e2e_seconds", e.e2e),
        ("queue_seconds", e.queue),
    ):
        name = family(t, canonical)
        w.metric(name, "histogram", "", histogram.render(name, ""))
    return w.text()


def sglang(e: FakeVllmEngine) -> str:
    """SGLang 0.5: `sglang:` counters with `_total`, per-request histograms, the scheduler's
    gauges under priority="" (the total) with the rank labels, its KV share as token_usage."""
    w, s = _Writer(), "sglang"
    labels = f'model_name="{e.model_name}"'
    ranked = f'engine_type="unified",{labels},moe_ep_rank="0",pp_rank="0",priority="",tp_rank="0"'
    ok = e.success["stop"] + e.success["length"]
    for canonical, value, help_text in (
        ("requests_finished", ok, "Number of requests processed."),
        ("prompt_tokens", e.prompt_tokens, "Number of prefill tokens processed."),
        ("generation_tokens", e.generation_tokens, "Number of generation tokens processed."),
        ("preemptions", e.preemptions, "Number of retracted requests."),
    ):
        name = counter(s, canonical)
        w.metric(name, "counter", help_text, [f"{name}{{{labels}}} {_num(value)}"])
    # An errored request is answered 500 on the route the client called (0.5.10+).
    name = counter(s, "request_errors")
    route = 'endpoint="/v1/chat/completions",method="POST"'
    w.metric(name, "counter", "Number of HTTP responses.", [
        f'{name}{{{route},status_code="200"}} {_num(ok)}',
        f'{name}{{{route},status_code="500"}} {_num(e.success["error"])}',
    ])  # fmt: skip
    for canonical, value in (("requests_running", e.running), ("requests_waiting", e.waiting)):
        name = family(s, canonical)
        w.metric(name, "gauge", "", [f"{name}{{{ranked}}} {_num(value)}"])
    name = family(s, "kv_cache_usage")
    kv = _num(round(e.kv_usage, 4))
    w.metric(name, "gauge", "The token usage.", [f"{name}{{{labels}}} {kv}"])
    for canonical, histogram in (
        ("ttft_seconds", e.ttft),
        ("tpot_seconds", e.tpot),
        ("itl_seconds", e.itl),
        ("e2e_seconds", e.e2e),
    ):
        name = family(s, canonical)
        w.metric(name, "histogram", "", histogram.render(name, labels))
    name = family(s, "queue_seconds")
    w.metric(name, "histogram", "", e.queue.render(name, ranked))
    return w.text()


def triton(e: FakeVllmEngine) -> str:
    """Triton with the TensorRT-LLM backend behind an `ensemble`: the ensemble's request
    counters and cumulative durations (microseconds), the backend's token histograms and
    request and KV-block gauges."""
    w, t = _Writer(), "triton"
    entry, backend = 'model="ensemble",version="1"', 'model="tensorrt_llm",version="1"'
    ok = e.success["stop"] + e.success["length"]
    name = counter(t, "requests_finished")
    w.metric(name, "counter", "Number of successful inference requests, all batch sizes",
             [f"{name}{{{entry}}} {_num(ok)}"])  # fmt: skip
    name = counter(t, "request_errors")
    w.metric(name, "counter", "Number of failed inference requests, all batch sizes",
             [f'{name}{{{entry},reason="BACKEND"}} {_num(e.success["error"])}'])  # fmt: skip
    for canonical, seconds in (("e2e_seconds_sum", e.e2e.sum), ("queue_seconds_sum", e.queue.sum)):
        name = counter(t, canonical)
        micros = round(seconds * 1e6)
        w.metric(name, "counter", "Cumulative inference duration in microseconds",
                 [f"{name}{{{entry}}} {_num(micros)}"])  # fmt: skip
    for canonical, histogram, kind in (
        ("prompt_tokens", e.triton_prompt, "total_input_tokens"),
        ("generation_tokens", e.triton_generation, "total_output_tokens"),
    ):
        name = family(t, canonical)
        w.metric(name, "histogram", "Token lengths",
                 histogram.render(name, f'{backend},response_metric_type="{kind}"'))  # fmt: skip
    name = family(t, "requests_running")
    w.metric(name, "gauge", "TRT LLM request metrics", [
        f'{name}{{{backend},request_type="scheduled"}} {_num(e.running)}',
        f'{name}{{{backend},request_type="waiting"}} {_num(e.waiting)}',
    ])  # fmt: skip
    name = family(t, "kv_cache_usage")
    kv = _num(round(e.kv_usage, 4))
    w.metric(name, "gauge", "TRT LLM KV cache block metrics",
             [f'{name}{{kv_cache_block_type="fraction",{backend}}} {kv}'])  # fmt: skip
    return w.text()


WRITERS: dict[str, Callable[[FakeVllmEngine], str]] = {
    "tgi": tgi,
    "sglang": sglang,
    "triton": triton,
}


def bucket_layout(engine: str, window: int) -> dict[str, tuple[float, ...]]:
    """The edges of each simulated histogram for `engine` (vLLM's are the engine module's)."""
    if engine == "tgi":
        return {
            "ttft": TGI_DURATION_BUCKETS, "itl": TGI_DURATION_BUCKETS,
            "e2e": TGI_DURATION_BUCKETS, "queue": TGI_DURATION_BUCKETS,
            "tpot": TGI_DURATION_BUCKETS, "prefill": TGI_DURATION_BUCKETS,
            "decode": TGI_DURATION_BUCKETS, "prompt": tgi_token_buckets(window),
            "generation": tgi_token_buckets(window),
        }  # fmt: skip
    if engine == "sglang":
        return {
            "ttft": SGLANG_TTFT_BUCKETS, "itl": SGLANG_TOKEN_TIME_BUCKETS,
            "e2e": SGLANG_E2E_BUCKETS, "queue": SGLANG_QUEUE_BUCKETS,
            "tpot": SGLANG_TOKEN_TIME_BUCKETS, "prefill": SGLANG_E2E_BUCKETS,
            "decode": SGLANG_E2E_BUCKETS,
        }  # fmt: skip
    return {}


def check_engine(engine: str) -> str:
    if engine not in SIMULATED_ENGINES:
        raise ValueError(
            f"engine: the simulator writes {', '.join(SIMULATED_ENGINES)}, got {engine!r}"
        )
    return engine
