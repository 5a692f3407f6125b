"""Which engine metrics feed which canonical series.

Canonical series, in seconds, tokens and ratios 0-1:
- counters: requests_finished, request_errors, request_aborts, prompt_tokens,
  generation_tokens, and (Triton only) e2e_seconds_sum, queue_seconds_sum; (vLLM and SGLang)
  preemptions; (vLLM and Triton's TensorRT-LLM backend) finished_requests_counted with
  finished_prompt_tokens and finished_generation_tokens: the requests the engine's per-request
  token histograms observed and their tokens (a histogram's `_count` and `_sum` read as
  counters); (TGI) prompt_requests_counted, the prompt histogram's own `_count` where it observes
  other requests than the output one (absent: finished_requests_counted counts both);
- histograms, one statistic each (never one standing in for another):
  ttft_seconds     time to first token, per request
  tpot_seconds     time per output token, per request: (last token - first token) / (tokens - 1)
  itl_seconds      inter-token latency, per token gap (a request of n tokens adds n - 1)
  e2e_seconds      end-to-end latency, per request
  queue_seconds    waiting for the scheduler, per request        } the engine-side layers
  prefill_seconds  from first scheduled to first token, per request } of a request's time
  decode_seconds   from first token to last token, per request      }
- gauges: requests_running and requests_waiting (summed over series), kv_cache_usage (the max
  over series: the fullest engine is the one that runs out first).

Every histogram here is measured by the engine (vantage "server"): its clock starts when the
request reaches the engine, after the HTTP server, the gateway and (for vLLM) the tokenizer.
What each engine's histogram measures, from which moment to which, is in docs/method.md.

vLLM (`vllm:` prefix; `ray_vllm:` as Ray Serve LLM exports the same metrics; 0.33.0 and 0.34.0
  register each of these as 0.32.0 does: same name, type, labels and buckets)
  requests_finished  request_success_total, summed over finished_reason except "abort" and
                     "error" (V0 and V1 count aborted and errored requests in it too)
  request_errors     request_success_total{finished_reason="error"}, plus
                     admission_rejections_total (0.32: refused with a 503, the queue full)
  request_aborts     request_success_total{finished_reason="abort"} (vLLM to 0.32 does not
                     count a client that disconnects: vllm#31503; its tokens still count)
  prompt_tokens      prompt_tokens_total
  generation_tokens  generation_tokens_total
  finished_requests_counted   request_generation_tokens_count  } observed once per request
  finished_prompt_tokens      request_prompt_tokens_sum        } as it finishes (any reason
  finished_generation_tokens  request_generation_tokens_sum    } the engine records); a client
                     that disconnects is in neither the histograms nor request_success, while
                     its tokens are in the token counters: tokens per request from these
  preemptions        num_preemptions_total (a running request evicted for want of KV blocks)
  ttft_seconds       time_to_first_token_seconds
  tpot_seconds       request_time_per_output_token_seconds (vLLM 0.11 and later only)
  itl_seconds        inter_token_latency_seconds, else (older) time_per_output_token_seconds:
                     the old name was always the per-gap histogram (V0 and V1 observed every
                     token gap in it); 0.11 renamed it and added the per-request TPOT beside it
  e2e_seconds        e2e_request_latency_seconds
  queue_seconds      request_queue_time_seconds
  prefill_seconds    request_prefill_time_seconds
  decode_seconds     request_decode_time_seconds
  requests_running   num_requests_running
  requests_waiting   num_requests_waiting
  kv_cache_usage     kv_cache_usage_perc, else (older) gpu_cache_usage_perc
TGI (router)
  requests_finished  tgi_request_success
  request_errors     tgi_request_failure except err "validation" and "template" (HTTP 422, the
                     client's), "dropped" and "cancelled"; "overloaded" (429) is an error
  request_aborts     tgi_request_failure{err="dropped"|"cancelled"} (the client went away; TGI
                     writes only "dropped")
  prompt_tokens      tgi_request_input_length_sum (the histogram's sum is the token total),
                     observed when the tokenized prompt passes the length checks: requests
                     that later fail or are dropped count too (a best_of=n request n times;
                     3.x: a generation continued past each 1,024 tokens again, its prompt then
                     holding the text generated so far)
  generation_tokens  tgi_request_generated_tokens_sum, successful requests only (best_of: the
                     sequence returned); so are the success counter and every latency histogram
  prompt_requests_counted     tgi_request_input_length_count      } each sum over its own
  finished_prompt_tokens      tgi_request_input_length_sum        } count: prompt tokens per
  finished_requests_counted   tgi_request_generated_tokens_count  } validated sequence, output
  finished_generation_tokens  tgi_request_generated_tokens_sum    } tokens per success
  tpot_seconds       tgi_request_mean_time_per_token_duration (per request: its inference
                     time over its generated tokens, so the prefill is spread over the tokens)
  e2e_seconds        tgi_request_duration
  queue_seconds      tgi_request_queue_duration
  requests_running   tgi_batch_current_size;  requests_waiting  tgi_queue_size
  (no TTFT, no inter-token histogram and no KV-cache metric)
SGLang (`sglang:` prefix; read against the source of 0.4.0, 0.4.5, 0.4.10, 0.5.1-0.5.23)
  requests_finished  num_requests_total (0.4.5+): every request whose last output reached the
                     tokenizer, aborted ones among them (a stream abandoned mid-generation
                     counts here and in num_aborted_requests_total; no label tells them apart)
  request_errors     http_responses_total{status_code 500|502|503|504} on the model's routes
                     (0.5.10+): a queue-full (--max-queued-requests) or timed-out request is
                     answered 503 and counted nowhere else; a stream that fails after its 200
                     is not counted
  request_aborts     num_aborted_requests_total (0.4.10+; a client gone, queued or running)
  prompt_tokens      prompt_tokens_total;  generation_tokens  generation_tokens_total
                     (counted in the same call as num_requests_total, so tokens over requests
                     are tokens per request: prompt_tokens_histogram and
                     generation_tokens_histogram, observed in that call too, hold the same
                     sums and counts and are not read; behind --collect-tokens-histogram
                     0.4.10-0.5.10, always there 0.5.15+)
  preemptions        num_retracted_requests_total (0.5.10+), else (0.4.10-0.5.1)
                     total_retracted_reqs, the same running total as a gauge, updated at each
                     decode log (every 40 decode steps): running requests whose KV the
                     scheduler freed and requeued because the next decode step did not fit;
                     0.4.0-0.4.5 and 0.5.6 expose no total
  ttft_seconds       time_to_first_token_seconds (to 0.5.20, a non-streaming request's
                     first output is its first 50 tokens or its end: its "TTFT" is that; 0.5.23
                     takes the scheduler's first-token time)
  tpot_seconds       request_time_per_output_token_seconds (0.5.23+: per request, stop and
                     length finishes only). 0.4.0's `time_per_output_token_seconds` is a
                     request's running mean, (now - first token) / (tokens - 1), observed at
                     every streamed chunk: the docs' scrape holds 7,400,757 of them for 11,008
                     requests. Not read.
  itl_seconds        inter_token_latency_seconds (0.4.5+; a chunk of n tokens adds n gaps)
  e2e_seconds        e2e_request_latency_seconds
  queue_seconds      queue_time_seconds (0.5.6 at the latest, not 0.5.1), else (0.3)
                     waiting_request_latency_seconds; 0.4.x has no queue histogram
  requests_running   num_running_reqs, else (0.3) num_requests_running } priority="" only: with
  requests_waiting   num_queue_reqs, else (0.3) num_requests_waiting   } priority scheduling
                     (0.5.10+) each priority's count stands beside that total
  kv_cache_usage     token_usage
Triton (core metrics, plus the TensorRT-LLM backend's gauges and token histograms); where a
scrape has an `ensemble` or `tensorrt_llm_bls` model, the request series are read from those
models alone
  requests_finished  nv_inference_request_success
  request_errors     nv_inference_request_failure except reason="CANCELED" (Triton 24.x+)
  request_aborts     nv_inference_request_failure{reason="CANCELED"} (the client went away)
  prompt_tokens      nv_llm_input_token_len_sum, generation_tokens  nv_llm_output_token_len_sum
                     (TensorRT-LLM backend 0.16+, on its own model, `tensorrt_llm`): one
                     observation per request, at its final response, of its input ids and of
                     its output ids summed over its responses (streamed or not; every beam's),
                     failed requests included (an executor error is a final response), and a
                     cancelled one with what it got, once the executor answers it as final.
                     A request with a batch dimension is observed once with one row's ids:
                     none of the model's token series is read where its nv_inference_count
                     exceeds its nv_inference_request_success (a batched request was served)
  finished_requests_counted, finished_prompt_tokens, finished_generation_tokens
                     the same histograms' output `_count` and both `_sum`s
  e2e_seconds_sum    nv_inference_request_duration_us (cumulative microseconds -> seconds)
  queue_seconds_sum  nv_inference_queue_duration_us (cumulative microseconds -> seconds)
  ttft_seconds       nv_inference_first_response_histogram_ms (edges and sum ms -> s)
  requests_running   nv_trt_llm_request_metrics{request_type="scheduled"}
  requests_waiting   nv_trt_llm_request_metrics{request_type="waiting"} (backend 0.18+: active
                     less scheduled; the executor's own queue is not exported), else its
                     "active" less its "scheduled" (the same, computed: 0.9-0.17), plus
                     nv_inference_pending_request_count of every model but postprocessing
                     (Triton's queues in front of the models; the ensemble's is always 0)
  kv_cache_usage     nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type="fraction"} (backend
                     0.18+), else its "used" over its "max" blocks: the backend's own fraction
TensorRT-LLM's `trtllm-serve` (`trtllm_` prefix, `trtllm:` as Dynamo re-exports it, or none: the
releases before 2026); vLLM's names and meanings, read as vLLM's are
  requests_finished  request_success_total except finished_reason "abort", "cancelled", "error"
  request_aborts     request_success_total{finished_reason="abort"|"cancelled"}
  prompt_tokens, generation_tokens, ttft_seconds, e2e_seconds, queue_seconds, prefill_seconds,
  decode_seconds, requests_running, requests_waiting: as vLLM's names
  tpot_seconds       time_per_output_token_seconds (one observation per finished request)
  kv_cache_usage     kv_cache_utilization
  (no request errors: its `request_error_total` counts HTTP answers by code, the client's
  mistakes among them)

Notes:
- Names decide, not `# TYPE`: a counter is found with or without `_total`, typed or untyped.
- Where a metric was renamed, the first-listed (newer) name wins when a scrape has both: vLLM
  exposes a deprecated name beside its successor for a release or two, and counting both
  would double every request.
- TPOT and ITL are different statistics: a request with one slow gap among 100 fast ones
  has a TPOT close to the fast gaps, while its slow gap is 1 in 99 of the ITL samples. An
  engine without a per-request TPOT histogram has no live TPOT; ITL never stands in for it.
- Triton's core latency metrics are cumulative microsecond counters: they give a mean
  (`e2e_seconds_sum` / `requests_finished`), never a percentile. Its TTFT histogram exists only
  with `--metrics-config histogram_latencies=true`. Token counts come from the TensorRT-LLM
  backend alone (0.16, late 2024, and later); a Triton serving another backend counts none.
- SGLang repeats scheduler metrics for each tensor/pipeline-parallel rank of one engine: series
  that differ only in those labels are collapsed by max before anything is summed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from core.discovery import import_submodules
from core.names import check_name

Kind = Literal["counter", "histogram", "gauge", "histogram_sum", "histogram_count"]

COUNTERS = (
    "requests_finished",
    "request_errors",
    "request_aborts",
    "prompt_tokens",
    "generation_tokens",
    "e2e_seconds_sum",
    "queue_seconds_sum",
    "finished_requests_counted",
    "finished_prompt_tokens",
    "finished_generation_tokens",
    "prompt_requests_counted",
    "preemptions",
)
HISTOGRAMS = (
    "ttft_seconds",
    "tpot_seconds",
    "itl_seconds",
    "e2e_seconds",
    "queue_seconds",
    "prefill_seconds",
    "decode_seconds",
)
GAUGES = ("requests_running", "requests_waiting", "kv_cache_usage")


@dataclass(frozen=True)
class Rule:
    canonical: str
    # "histogram_sum" / "histogram_count": a histogram's `_sum` / `_count` read as a counter
    # (TGI's and Triton's token totals; vLLM's per-request token histograms)
    kind: Kind
    names: tuple[str, ...]  # source metric names without suffixes, preferred (newest) first
    scale: float = 1.0  # into canonical units: values, and histogram edges and sums
    where: tuple[tuple[str, str], ...] = ()  # only samples carrying these labels
    aggregate: Literal["sum", "max"] = "sum"  # gauges, across series
    collapse: tuple[str, ...] = ()  # labels whose series repeat one value (max across them)
    # ...and, like `where`, only samples carrying none of these label values (finished_reason)
    exclude: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # ...and only samples whose label takes one of these values (TGI's err="dropped|cancelled")
    only: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # Where some series carry one of these label values, only those series count (Triton's
    # ensemble or BLS model: the one clients call, while the models it calls count the same
    # requests again); where none does, every series counts.
    prefer: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # A counter or gauge whose series add to the canonical's (vLLM's admission rejections are
    # errors beside the requests that finished in error; Triton's own queue in front of the
    # TensorRT-LLM executor's), where the other rules of one canonical are alternatives of
    # which the first found is read.
    adds: bool = False
    # The prefixes the engine's metrics come under (`_prefixed`: vLLM's own and Ray's), first
    # preferred; `names` holds each name under each of them.
    prefixes: tuple[str, ...] = ()
    # A gauge read as a ratio: each series `where` selects over the series of the same metric
    # and other labels that carries these label values in their place (TensorRT-LLM's used KV
    # blocks over its max blocks, `where` kv_cache_block_type="used", `per` ... "max").
    per: tuple[tuple[str, str], ...] = ()
    # A gauge read as a difference, as `per` a ratio: each series `where` selects less the
    # series with these label values in their place (TensorRT-LLM backends before 0.18: the
    # executor's active requests less those scheduled, what 0.18 exports as `waiting`); no
    # reading where that is below 0.
    less: tuple[tuple[str, str], ...] = ()
    # Two counters, (items, requests): where, for the series' values of `batch_labels`, the
    # first exceeds the second, some request carried several items (a batch dimension) and
    # the series is not read (Triton's TensorRT-LLM backend observes a batched request's
    # token histograms once, with one of its sequences: per request they read too little).
    unless_batched: tuple[str, ...] = ()
    batch_labels: tuple[str, ...] = ()  # kept by the recording rules, on all three metrics

    def newest_names(self) -> tuple[str, ...]:
        """The newest name under each prefix: what exported PromQL, which cannot prefer one
        name per scrape as the parser does, selects (a target has one prefix, never two)."""
        if not self.prefixes:
            return self.names[:1]
        base = self.names[0].removeprefix(self.prefixes[0])
        return tuple(prefix + base for prefix in self.prefixes)

    def __post_init__(self) -> None:
        if self.adds and not (self.counter_like or (self.kind == "gauge" and not self.per)):
            raise ValueError(
                f"{self.canonical}: only a counter or a plain gauge adds to another rule's series"
            )
        for other in (self.per, self.less):
            if other and (
                self.kind != "gauge"
                or {k for k, _ in other} != dict(self.where).keys()
                or (self.per and self.less)
            ):
                raise ValueError(
                    f"{self.canonical}: `per` or `less` combines a gauge with the labels of"
                    " its `where` (one of them)"
                )

    @property
    def counter_like(self) -> bool:
        return self.kind in ("counter", "histogram_sum", "histogram_count")


def _prefixed(prefixes: tuple[str, ...], rules: list[Rule]) -> tuple[Rule, ...]:
    """Each rule's names under each prefix, the first prefix's names first (preferred)."""
    return tuple(
        replace(r, names=tuple(p + n for p in prefixes for n in r.names), prefixes=prefixes)
        for r in rules
    )


VLLM_NOT_SUCCESS = ("abort", "error")
# vLLM's per-request phases and scheduler gauges, under the names TensorRT-LLM's server took
# from it too (unprefixed: each engine's prefixes are added to its own table).
VLLM_REQUEST_PHASES = (
    Rule("e2e_seconds", "histogram", ("e2e_request_latency_seconds",)),
    Rule("queue_seconds", "histogram", ("request_queue_time_seconds",)),
    Rule("prefill_seconds", "histogram", ("request_prefill_time_seconds",)),
    Rule("decode_seconds", "histogram", ("request_decode_time_seconds",)),
    Rule("requests_running", "gauge", ("num_requests_running",)),
    Rule("requests_waiting", "gauge", ("num_requests_waiting",)),
)

# Ray Serve LLM exports vLLM's metrics through Ray's own exporter, which prefixes every metric
# with `ray_`: `ray_vllm:<name>`, with Ray's labels (a replica's `WorkerId`) beside vLLM's. The
# same metrics under another name, read where vLLM's own are absent.
VLLM_PREFIXES = ("vllm:", "ray_vllm:")

VLLM = _prefixed(
    VLLM_PREFIXES,
    [
        # "Success" is vLLM's name for "finished": an aborted (client gone) or errored request
        # finishes too, with its reason in a label. Neither is a success; errors are errors.
        Rule(
            "requests_finished",
            "counter",
            ("request_success",),
            exclude=(("finished_reason", VLLM_NOT_SUCCESS),),
        ),
        Rule(
            "request_errors",
            "counter",
            ("request_success",),
            where=(("finished_reason", "error"),),
        ),
        # Refused with HTTP 503 because a queue limit was reached (--max-num-queued-reqs,
        # vLLM 0.32): never served, so no finished_reason, yet the service failing them.
        Rule("request_errors", "counter", ("admission_rejections",), adds=True),
        Rule(
            "request_aborts",
            "counter",
            ("request_success",),
            where=(("finished_reason", "abort"),),
        ),
        Rule("prompt_tokens", "counter", ("prompt_tokens",)),
        Rule("generation_tokens", "counter", ("generation_tokens",)),
        # The token counters also hold the tokens of a request whose client disconnected,
        # which no request counter counts (vllm#31503): over the requests counted, they
        # overstate tokens per request. These histograms observe each request as it
        # finishes, so their sums over their count are tokens per finished request.
        Rule("finished_requests_counted", "histogram_count", ("request_generation_tokens",)),
        Rule("finished_prompt_tokens", "histogram_sum", ("request_prompt_tokens",)),
        Rule("finished_generation_tokens", "histogram_sum", ("request_generation_tokens",)),
        # A running request evicted (its KV blocks freed, recomputed later) because the KV
        # cache had no room for the batch's next tokens.
        Rule("preemptions", "counter", ("num_preemptions",)),
        Rule("ttft_seconds", "histogram", ("time_to_first_token_seconds",)),
        # Per request, from vLLM 0.11; before that vLLM had no per-request TPOT histogram.
        Rule("tpot_seconds", "histogram", ("request_time_per_output_token_seconds",)),
        # Per token gap under both names: 0.11 renamed the old one, keeping its meaning.
        Rule(
            "itl_seconds",
            "histogram",
            ("inter_token_latency_seconds", "time_per_output_token_seconds"),
        ),
        *VLLM_REQUEST_PHASES,
        Rule(
            "kv_cache_usage",
            "gauge",
            ("kv_cache_usage_perc", "gpu_cache_usage_perc"),
            aggregate="max",
        ),
    ],
)

# TGI's router counts a refused request under `err` (router/src/infer/mod.rs, server.rs and
# backends/v3/src/{backend,queue}.rs, v1.4.5-v3.3.7): "validation" and "template" are the
# client's request refused with HTTP 422, never served (a chat template raising on the messages
# it was sent, say); "dropped" a client that went away, queued or mid-generation (vLLM's abort;
# TGI itself never writes "cancelled", read alike should it appear); the rest ("overloaded",
# HTTP 429 at --max-concurrent-requests, "generation" 424, "incomplete" 500) are the service
# failing a request it took.
TGI_CLIENT_GONE = ("dropped", "cancelled")
TGI_CLIENTS_MISTAKES = ("validation", "template")
TGI_NOT_SERVICE_ERRORS = (*TGI_CLIENTS_MISTAKES, *TGI_CLIENT_GONE)

TGI = (
    Rule("requests_finished", "counter", ("tgi_request_success",)),
    Rule(
        "request_errors",
        "counter",
        ("tgi_request_failure",),
        exclude=(("err", TGI_NOT_SERVICE_ERRORS),),
    ),
    Rule("request_aborts", "counter", ("tgi_request_failure",), only=(("err", TGI_CLIENT_GONE),)),
    Rule("prompt_tokens", "histogram_sum", ("tgi_request_input_length",)),
    Rule("generation_tokens", "histogram_sum", ("tgi_request_generated_tokens",)),
    # Tokens per request: each histogram's sum over its own count. The prompt histogram is
    # observed at validation (router/src/validation.rs, validate_input), for every request that
    # passes the length checks, failed and dropped ones too, and once per best_of sequence
    # (infer/mod.rs generate_best_of); the output one with the success counter
    # (server.rs generate_internal / generate_stream_internal). Over the success counter the
    # prompt sum would count the tokens of requests it does not count.
    Rule("prompt_requests_counted", "histogram_count", ("tgi_request_input_length",)),
    Rule("finished_prompt_tokens", "histogram_sum", ("tgi_request_input_length",)),
    Rule("finished_requests_counted", "histogram_count", ("tgi_request_generated_tokens",)),
    Rule("finished_generation_tokens", "histogram_sum", ("tgi_request_generated_tokens",)),
    Rule("tpot_seconds", "histogram", ("tgi_request_mean_time_per_token_duration",)),
    Rule("e2e_seconds", "histogram", ("tgi_request_duration",)),
    Rule("queue_seconds", "histogram", ("tgi_request_queue_duration",)),
    Rule("requests_running", "gauge", ("tgi_batch_current_size",)),
    Rule("requests_waiting", "gauge", ("tgi_queue_size",)),
)

_SGLANG_RANKS = ("tp_rank", "pp_rank", "moe_ep_rank")
# The HTTP routes that serve a model's requests (`entrypoints/http_server.py`): a 5xx from
# these failed a user's request; one from /health or an admin route did not.
SGLANG_REQUEST_ENDPOINTS = (
    "/generate",
    "/v1/completions",
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/invocations",
    "/v1/embeddings",
    "/encode",
    "/v1/rerank",
    "/v1/score",
    "/v1/classify",
    "/classify",
)
SGLANG_SERVER_ERRORS = ("500", "502", "503", "504")
# With --enable-priority-scheduling (0.5.10+) the scheduler gauges carry the total under
# priority="" and each priority's share beside it: the total alone, not their sum.
_SGLANG_TOTAL = (("priority", ""),)
SGLANG = tuple(
    replace(r, collapse=_SGLANG_RANKS)
    for r in _prefixed(
        ("sglang:",),
        [
            Rule("requests_finished", "counter", ("num_requests",)),
            # The only count of requests the service failed: a queue-full or timed-out request
            # answered 503, an internal error 500 (0.5.10+; non-streaming requests only, a
            # stream has answered 200 before it fails).
            Rule(
                "request_errors",
                "counter",
                ("http_responses",),
                only=(
                    ("endpoint", SGLANG_REQUEST_ENDPOINTS),
                    ("status_code", SGLANG_SERVER_ERRORS),
                ),
            ),
            Rule("request_aborts", "counter", ("num_aborted_requests",)),
            Rule("prompt_tokens", "counter", ("prompt_tokens",)),
            Rule("generation_tokens", "counter", ("generation_tokens",)),
            # vLLM's preemption under SGLang's name: a decode step without KV room retracts
            # running requests (frees their KV, requeues them to recompute). 0.4.10-0.5.1 kept
            # the running total in a gauge; 0.5.6 only the last step's count (not read).
            Rule(
                "preemptions",
                "counter",
                ("num_retracted_requests", "total_retracted_reqs"),
            ),
            Rule("ttft_seconds", "histogram", ("time_to_first_token_seconds",)),
            # Per request, stop or length finishes only (0.5.23; not the per-chunk running mean
            # 0.4.0 called time_per_output_token_seconds).
            Rule("tpot_seconds", "histogram", ("request_time_per_output_token_seconds",)),
            Rule("itl_seconds", "histogram", ("inter_token_latency_seconds",)),
            Rule("e2e_seconds", "histogram", ("e2e_request_latency_seconds",)),
            # SGLang 0.3 named its queue histogram and its two scheduler gauges as vLLM's
            # (0.4.0 renamed the gauges and dropped the histogram; 0.5.x brought it back as
            # queue_time_seconds): the same per-request wait and the same counts.
            Rule(
                "queue_seconds",
                "histogram",
                ("queue_time_seconds", "waiting_request_latency_seconds"),
            ),
            Rule(
                "requests_running",
                "gauge",
                ("num_running_reqs", "num_requests_running"),
                where=_SGLANG_TOTAL,
            ),
            Rule(
                "requests_waiting",
                "gauge",
                ("num_queue_reqs", "num_requests_waiting"),
                where=_SGLANG_TOTAL,
            ),
            Rule("kv_cache_usage", "gauge", ("token_usage",), aggregate="max"),
        ],
    )
)

# A TensorRT-LLM deployment on Triton answers through an `ensemble` (or `tensorrt_llm_bls`) model
# that calls `preprocessing`, `tensorrt_llm` and `postprocessing`: each counts every request, so
# summing all models would count one request three or four times. The entry models are read alone
# where a scrape has them. Triton 24.x and later give each failure a `reason`: CANCELED is the
# client going away (an abort, as vLLM's and TGI's); REJECTED, BACKEND and OTHER are failures.
TRITON_ENTRY_MODELS = (("model", ("ensemble", "tensorrt_llm_bls")),)
TRITON_CLIENT_GONE = ("CANCELED",)
# The model the backend's ensemble and BLS call with each response (`all_models/
# inflight_batcher_llm/postprocessing`): its queue holds generated text, not requests.
TRITON_AFTER_GENERATION = ("postprocessing",)

# Triton's own per-model series: read from the entry models where a scrape has them.
TRITON_MODEL_SERIES = tuple(
    replace(r, prefer=TRITON_ENTRY_MODELS)
    for r in [
        Rule("requests_finished", "counter", ("nv_inference_request_success",)),
        Rule(
            "request_errors",
            "counter",
            ("nv_inference_request_failure",),
            exclude=(("reason", TRITON_CLIENT_GONE),),
        ),
        Rule(
            "request_aborts",
            "counter",
            ("nv_inference_request_failure",),
            only=(("reason", TRITON_CLIENT_GONE),),
        ),
        Rule("e2e_seconds_sum", "counter", ("nv_inference_request_duration_us",), scale=1e-6),
        Rule("queue_seconds_sum", "counter", ("nv_inference_queue_duration_us",), scale=1e-6),
        Rule(
            "ttft_seconds", "histogram", ("nv_inference_first_response_histogram_ms",), scale=1e-3
        ),
    ]
)

# The TensorRT-LLM backend's per-request token histograms (`custom_metrics_reporter.cc`).
# A Triton request with a batch dimension of n is n executor requests (`utils.cc`
# splitBatchInputsTensors), observed once, at the last one's final response, with that one's
# input and output ids alone (`model_instance_state.cc` 1362-1363, 1385-1398 at v0.19.0): n - 1
# sequences go uncounted. Triton counts the model's successes once per request and its
# inferences n times (core `infer_request.cc` ReportStatistics, `infer_stats.cc`
# UpdateSuccess), so more inferences than successes tell such a request was served.
_TRTLLM_BATCHED = ("nv_inference_count", "nv_inference_request_success")
_TRTLLM_INPUT_TOKENS: dict = {
    "names": ("nv_llm_input_token_len",),
    "where": (("response_metric_type", "total_input_tokens"),),
    "unless_batched": _TRTLLM_BATCHED,
    "batch_labels": ("model",),
}
_TRTLLM_OUTPUT_TOKENS: dict = {
    "names": ("nv_llm_output_token_len",),
    "where": (("response_metric_type", "total_output_tokens"),),
    "unless_batched": _TRTLLM_BATCHED,
    "batch_labels": ("model",),
}

TRITON = (
    *TRITON_MODEL_SERIES,
    # The TensorRT-LLM backend (0.16+) observes each request once, as its final response goes
    # out (`model_instance_state.cc` WaitForResponse -> reportCustomMetrics): its input ids, and
    # its output ids summed over its responses. Only the backend's own model carries them, so
    # the ensemble's preference does not apply. Per-request histograms of one moment, as vLLM's
    # request_*_tokens: their count and sums also give tokens per request of the same requests
    # (failed ones among them, which Triton's success counter leaves out).
    Rule("prompt_tokens", "histogram_sum", **_TRTLLM_INPUT_TOKENS),
    Rule("generation_tokens", "histogram_sum", **_TRTLLM_OUTPUT_TOKENS),
    Rule("finished_requests_counted", "histogram_count", **_TRTLLM_OUTPUT_TOKENS),
    Rule("finished_prompt_tokens", "histogram_sum", **_TRTLLM_INPUT_TOKENS),
    Rule("finished_generation_tokens", "histogram_sum", **_TRTLLM_OUTPUT_TOKENS),
    Rule(
        "requests_running",
        "gauge",
        ("nv_trt_llm_request_metrics",),
        where=(("request_type", "scheduled"),),
    ),
    # Waiting: admitted, not yet in a batch, wherever the request is. In the executor, its
    # active requests not scheduled in the last iteration (backend 0.18+ exports them as
    # `waiting`, active less scheduled: `model_instance_state.cc` WaitForStats). In front of
    # each model, Triton's own queue, added: `nv_inference_pending_request_count` holds a
    # request from its enqueue until an instance takes it (core `infer_request.cc` SetState),
    # and the backend hands a request to its executor only once taken, so no request is in
    # both. The ensemble's own count stays 0 (executing once passed on); postprocessing's
    # pending requests are responses of requests already generating (one per streamed
    # chunk), not waiting requests, so they are left out.
    Rule(
        "requests_waiting",
        "gauge",
        ("nv_trt_llm_request_metrics",),
        where=(("request_type", "waiting"),),
    ),
    # Before 0.18 the same difference, computed here from the `active` and `scheduled` it
    # exports (since 0.9, `custom_metrics_reporter.cc` request_labels_).
    Rule(
        "requests_waiting",
        "gauge",
        ("nv_trt_llm_request_metrics",),
        where=(("request_type", "active"),),
        less=(("request_type", "scheduled"),),
    ),
    Rule(
        "requests_waiting",
        "gauge",
        ("nv_inference_pending_request_count",),
        exclude=(("model", TRITON_AFTER_GENERATION),),
        adds=True,
    ),
    Rule(
        "kv_cache_usage",
        "gauge",
        ("nv_trt_llm_kv_cache_block_metrics",),
        where=(("kv_cache_block_type", "fraction"),),
        aggregate="max",
    ),
    # Before backend 0.18 there is no fraction; it is computed as used over max blocks
    # (`model_instance_state.cc` WaitForStats, model.py's fraction_used_blocks), of the same
    # model and instance: that ratio, where the fraction is absent.
    Rule(
        "kv_cache_usage",
        "gauge",
        ("nv_trt_llm_kv_cache_block_metrics",),
        where=(("kv_cache_block_type", "used"),),
        per=(("kv_cache_block_type", "max"),),
        aggregate="max",
    ),
)

# TensorRT-LLM's own server (`trtllm-serve`, `/prometheus/metrics`, its `MetricsCollector`
# adapted from vLLM's): the names were bare from the first release (mid-2025) and carry
# `trtllm_` since early 2026 (TensorRT-LLM#12545, which also added the token counters, the
# phase histograms and the iteration gauges); Dynamo re-exports them as `trtllm_` or `trtllm:`.
# Its TPOT is observed once per finished request, as vLLM's per-request one. A cancelled
# request finishes with reason "cancelled".
TRTLLM_PREFIXES = ("trtllm_", "trtllm:", "")
TRTLLM_CLIENT_GONE = ("abort", "cancelled")

TRTLLM = _prefixed(
    TRTLLM_PREFIXES,
    [
        Rule(
            "requests_finished",
            "counter",
            ("request_success",),
            exclude=(("finished_reason", (*TRTLLM_CLIENT_GONE, "error")),),
        ),
        Rule(
            "request_aborts",
            "counter",
            ("request_success",),
            only=(("finished_reason", TRTLLM_CLIENT_GONE),),
        ),
        Rule("prompt_tokens", "counter", ("prompt_tokens",)),
        Rule("generation_tokens", "counter", ("generation_tokens",)),
        Rule("ttft_seconds", "histogram", ("time_to_first_token_seconds",)),
        Rule("tpot_seconds", "histogram", ("time_per_output_token_seconds",)),
        *VLLM_REQUEST_PHASES,
        Rule("kv_cache_usage", "gauge", ("kv_cache_utilization",), aggregate="max"),
    ],
)

# --- The engine registry ----------------------------------------------------------------------
# The one list of serving engines. Everything else reads it: the ingest serializer's `source`,
# the parser, pull kinds, a service's engine choices (dossiers), the docs. The agent takes any
# engine name and leaves the check to the server, so old agents learn new engines for free.


@dataclass(frozen=True)
class Engine:
    name: str  # as agents, pull kinds and services name it: lowercase, no spaces
    label: str  # as pages show it
    rules: tuple[Rule, ...]
    # What a counter's sample is called where Prometheus stores it: Python's prometheus_client
    # (vLLM, SGLang) adds `_total`; TGI (Rust's `metrics`) and Triton (prometheus-cpp) expose
    # the bare name, and a Prometheus scraping them keeps it.
    counter_suffix: str = "_total"


ENGINES: dict[str, Engine] = {}
EXPORTERS = ("dcgm",)  # GPU exporters: parsed by `collectors.exposition.dcgm`, not by rules


def register(engine: Engine) -> Engine:
    """Add an engine (a new module calls this once); its name must be new and fit the columns
    that store it (`core.names`), so a bad name fails here, not on its first push."""
    check_name(engine.name, what="engine")
    if engine.name in ENGINES or engine.name in EXPORTERS:
        raise ValueError(f"engine {engine.name!r} is already registered")
    ENGINES[engine.name] = engine
    return engine


def unregister(name: str) -> None:
    """Remove an engine (tests that register a throwaway one clean up with this)."""
    ENGINES.pop(name, None)


def engine_names() -> tuple[str, ...]:
    return tuple(ENGINES)


def sources() -> tuple[str, ...]:
    """Every `source` a scrape may name: the engines, then the exporters."""
    return (*ENGINES, *EXPORTERS)


def rules_for(source: str) -> tuple[Rule, ...]:
    return ENGINES[source].rules


def _selector(rule: Rule, engine: Engine) -> str:
    """One rule's series as PromQL selects them: the newest name, the sample's suffix, the
    labels kept or left out (`vllm:request_success_total{finished_reason="error"}`)."""
    name = rule.newest_names()[0]
    if rule.counter_like:
        name += {"histogram_sum": "_sum", "histogram_count": "_count"}.get(
            rule.kind, engine.counter_suffix
        )
    labels = [f'{k}="{v}"' for k, v in rule.where]
    labels += [f'{k}=~"{_alternatives(vs)}"' for k, vs in rule.only]
    labels += [f'{k}!~"{_alternatives(vs)}"' for k, vs in rule.exclude]
    return name + ("{" + ", ".join(labels) + "}" if labels else "")


def _alternatives(values: tuple[str, ...]) -> str:
    # A page names a few values; a dozen routes (SGLang's) would drown the sentence.
    return "|".join(values) if len(values) <= 4 else "|".join(values[:3]) + "|…"


def measured_by(engine_name: str, canonicals: tuple[str, ...]) -> str:
    """Where a figure read from `canonicals` comes from on this engine, as pages name it:
    "TGI's tgi_request_success, tgi_request_failure{err!~...}". The mapping tables are the one
    truth, so no page says vLLM's metric of a TGI service; "" for an unknown engine, and a
    sentence saying so where the engine exports none of them."""
    engine = ENGINES.get(engine_name)
    if engine is None:
        return ""
    shown: list[str] = []
    missing: list[str] = []
    for canonical in canonicals:
        rules = [r for r in engine.rules if r.canonical == canonical]
        # The first rule of a canonical is the one read (the others: older names, fallbacks);
        # rules that add to it are named beside it.
        main = [r for r in rules if not r.adds][:1]
        shown += [_selector(r, engine) for r in main + [r for r in rules if r.adds]]
        if not rules:
            missing.append(canonical)
    if not shown:
        return f"{engine.label} exports no {', '.join(canonicals)}"
    said = f"{engine.label}'s {', '.join(dict.fromkeys(shown))}"
    return f"{said} (it exports no {', '.join(missing)})" if missing else said


register(Engine("vllm", "vLLM", VLLM))
register(Engine("tgi", "TGI", TGI, counter_suffix=""))
register(Engine("sglang", "SGLang", SGLANG))
register(Engine("triton", "Triton", TRITON, counter_suffix=""))
register(Engine("trtllm", "TensorRT-LLM", TRTLLM))

# A new engine is a module in this folder that calls `register()` (docs/extending.md): every
# module here is imported, in name order, after the built-ins above.
import_submodules(__name__)
