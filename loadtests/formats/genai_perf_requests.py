"""GenAI-Perf's per-request export, `profile_export.json`, as its `perf_analyzer` writes it.

    {"experiments": [{"experiment": {"mode": "concurrency", "value": 4},
                      "requests": [{"timestamp": ns, "request_inputs": {"payload": "{...}"},
                                    "response_timestamps": [ns, ...],
                                    "response_outputs": [{"response": "data: {...}"}, ...]}],
                      "window_boundaries": [ns, ...]}],
     "version": "...", "service_kind": "openai", "endpoint": "v1/completions"}

GenAI-Perf keeps this file beside its summary (`profile_export_genai_perf.json`, format
`genai-perf`) and computes the summary from it. It is the richer of the two: every request's
clock, so the percentiles (P99.9 where there are requests enough) come from the requests
(`per_request`), and one file of a `--concurrency-range` or `--request-rate-range` run holds
every load level, one run each, which form a sweep. Throughputs are over the experiment's
measurement windows (`window_boundaries`), as perf_analyzer counts them; GenAI-Perf's summary
divides by the first request to the last response, which on a short run at a set rate is off
by up to one arrival gap at each end.

Each request is read as GenAI-Perf reads it, but for what counts as a token. A response that
delivers no token (the closing "[DONE]", a usage-only chunk, a chat stream's first chunk that
only names the role) is dropped; TTFT is the first response with a token after the request's
timestamp, E2E the last; a request with no token at all is skipped, as GenAI-Perf skips it.

Output tokens, best first: the server's count when a chunk carries `usage.completion_tokens`
(streaming with `stream_options.include_usage`); the request's `max_tokens` when the answer
ended with finish_reason "length" (it stopped because it reached that many); else one per
streamed token event. GenAI-Perf instead re-tokenizes the answers' text with the tokenizer
given on its command line, which PerfHub does not have, and which, when it is not the served
model's, counts other tokens (40 a request where vLLM made 32: GenAI-Perf 0.0.8, e2e model).
Events alone can undercount: vLLM's completion stream sends "" for a token that ends inside a
character, so there they are exact, but its chat stream sends nothing for it (7.46 events for
8 tokens on the e2e model). The prompt's
tokens are only known from `usage.prompt_tokens`; without it the run has no prompt length
(the notes say so). The requests' own `max_tokens` and `ignore_eos` are read by the lint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import pairwise

from analysis.percentiles import QUANTILE_OF, tool_percentile

from .base import (
    TWIN_FIGURES,
    Ctx,
    Document,
    FieldRecorder,
    ParsedRun,
    epoch_to_datetime,
    mark_failed,
    mean_std,
    rate_label,
    single_object,
)
from .registry import LoadTestFormat, register

FORMAT = "genai-perf-requests"
# perf_analyzer's load modes -> the run field that holds the level
MODES = {"concurrency": "concurrency", "request_rate": "request_rate"}
SSE_DATA = "data:"
# How a request's output tokens were counted, best first.
USAGE = "usage.completion_tokens (the server's count)"
MAX_TOKENS = 'max_tokens (the answer stopped at its length: finish_reason "length")'
EVENTS = "streamed token events (one a token)"


def looks_like(data: dict) -> bool:
    experiments = data.get("experiments")
    return (
        isinstance(experiments, list)
        and bool(experiments)
        and isinstance(experiments[0], dict)
        and "requests" in experiments[0]
        and "experiment" in experiments[0]
    )


def parse(documents: list[Document]) -> list[ParsedRun]:
    data = single_object(FORMAT, documents)
    ctx = Ctx(FORMAT)
    service_kind = ctx.text(data, "service_kind") or "openai"
    if service_kind not in ("openai", "triton"):
        raise ctx.at("service_kind").error(f"expected 'openai' or 'triton', got {service_kind!r}")
    version = ctx.text(data, "version")
    experiments = ctx.array(data, "experiments")
    if not experiments:
        raise ctx.at("experiments").error("expected at least one experiment")
    runs = []
    for i, experiment in enumerate(experiments):
        ectx = ctx.at("experiments").at(i)
        if not isinstance(experiment, dict):
            raise ectx.error("expected an object")
        runs.append(_run(ectx, experiment, service_kind, version))
    return runs


def _run(ctx: Ctx, experiment: dict, service_kind: str, version: str | None) -> ParsedRun:
    recorder = FieldRecorder()
    put = recorder.put
    load = ctx.obj(experiment, "experiment")
    mode = ctx.at("experiment").text(load, "mode")
    level = ctx.at("experiment").num(load, "value", required=True)
    if mode == "concurrency":
        if level != int(level) or level < 1:
            raise ctx.at("experiment.value").error(f"expected a concurrency >= 1, got {level!r}")
        put("concurrency", int(level), "experiment.value (mode concurrency)")
    elif mode == "request_rate":
        put("request_rate", level, "experiment.value (mode request_rate, req/s)")
    samples: dict[str, list[float]] = {"ttft": [], "tpot": [], "itl": [], "e2e": []}
    starts, ends, tokens, prompt = [], [], [], []
    summary_view = _SummaryView()
    requested: list[float] = []
    skipped = unstreamed = 0
    bases: set[str] = set()
    for record in records(ctx, experiment, service_kind):
        summary_view.add(record)
        if record.requested_output is not None:
            requested.append(record.requested_output)
        if not record.arrivals:
            skipped += 1
            continue
        start, arrivals, count = record.start, record.arrivals, record.output_tokens
        ttft, e2e = (arrivals[0] - start) / 1e6, (arrivals[-1] - start) / 1e6
        bases.add(record.basis)
        samples["e2e"].append(e2e)
        if len(arrivals) == 1 and count > 1:
            # One response carrying several tokens: not streamed, so its first token came
            # with its last. Neither TTFT nor TPOT was measured.
            unstreamed += 1
        else:
            samples["ttft"].append(ttft)
            if count > 1:
                samples["tpot"].append((e2e - ttft) / (count - 1))
        samples["itl"].extend((b - a) / 1e6 for a, b in pairwise(arrivals))
        starts.append(start)
        ends.append(arrivals[-1])
        tokens.append(count)
        if record.prompt_tokens:
            prompt.append(record.prompt_tokens)

    succeeded = len(tokens)
    put("request_count", succeeded, "requests with a token in their responses")
    notes = ["percentiles are taken from the per-request times (DDSketch, ±1%)"]
    if unstreamed:
        notes.append(
            f"no TTFT or TPOT for {unstreamed} of {succeeded} requests: each came back in one "
            "response (not streamed), its first token with its last"
        )
    duration = None
    windows = _window_span(ctx, experiment)
    if windows:
        duration = windows
        put("duration_s", duration, "window_boundaries: first to last (the measurement windows)")
    elif starts:
        duration = (max(ends) - min(starts)) / 1e9
        put("duration_s", duration or None, "first request timestamp to last token response")
    if duration:
        put("qps", succeeded / duration, "requests with a token / duration")
        put("output_tps", sum(tokens) / duration, "output tokens / duration")
    output_mean, output_std = mean_std(tokens)
    token_source = ", else ".join(b for b in (USAGE, MAX_TOKENS, EVENTS) if b in bases)
    put("output_tokens_mean", output_mean, f"{token_source}: mean")
    put("output_tokens_std", output_std, f"{token_source}: std")
    if prompt:
        prompt_mean, prompt_std = mean_std(prompt)
        put("prompt_tokens_mean", prompt_mean, "usage.prompt_tokens: mean")
        put("prompt_tokens_std", prompt_std, "usage.prompt_tokens: std")
        if duration:
            put("input_tps", sum(prompt) / duration, "sum of usage.prompt_tokens / duration")
    else:
        notes.append(
            "no prompt length: the file has the prompts' text, not their tokens; add "
            '"stream_options": {"include_usage": true} to the payloads for the server\'s count '
            "(the summary, profile_export_genai_perf.json, is the same run again)"
        )
    if EVENTS in bases:
        notes.append(
            "some answers' output tokens are counted as their streamed token events (no usage, "
            "not stopped at max_tokens): a chat stream sends nothing for a token that decodes to "
            "no text, and a server that merges tokens into an event makes TPOT look higher"
        )
    if skipped:
        notes.append(f"{skipped} request(s) without any token skipped, as GenAI-Perf does")
    if mode not in MODES:
        notes.append(f"load mode {mode!r} is not a concurrency or a rate: the run joins no sweep")
    extra = {
        "tool": "genai-perf",
        "notes": notes,
        "requests_without_tokens": skipped,
        "load_mode": mode,
    }
    if requested:
        extra["requested_output_tokens"] = mean_std(requested)[0]
    if duration and samples["e2e"]:
        # Time-averaged requests in flight over the run, from the requests' own clocks.
        extra["achieved_concurrency"] = sum(samples["e2e"]) / 1000 / duration
    if figures := summary_view.figures():
        extra[TWIN_FIGURES] = {**figures, **present_load(recorder.fields)}
    fields = recorder.fields
    # A concurrency experiment is closed-loop: each client sends on as soon as it is answered.
    rate_inf = mode == "concurrency"
    label = rate_label(fields.get("concurrency"), fields.get("request_rate"), rate_inf)
    run = ParsedRun(
        format=FORMAT,
        tool_version=f"perf_analyzer {version}" if version else "genai-perf",
        label=f"genai-perf requests {label}".strip(),
        measured_at=epoch_to_datetime(ctx.at("requests"), min(starts) / 1e9) if starts else None,
        fields=fields,
        request_rate_inf=rate_inf,
        errors=None,  # perf_analyzer does not write failed requests into this file
        samples={family: values for family, values in samples.items() if values},
        extra=extra,
        sources={**recorder.sources, "measured_at": "the first request's timestamp"},
    )
    return mark_failed(run)


def present_load(fields: dict) -> dict:
    return {name: fields[name] for name in ("concurrency", "request_rate") if fields.get(name)}


class _SummaryView:
    """GenAI-Perf's own request latency and throughput, computed from this file as GenAI-Perf
    computes its summary (`profile_export_genai_perf.json`) from it: each request's responses
    without text trimmed from both ends, its latency to the last one left, numpy's linear
    percentiles, and every request over the first request to the last response. On the real
    pair (GenAI-Perf 0.0.8, c=1, 83 requests) every figure equals the summary's to 1e-9 ms,
    which is what lets an import tell that summary for this file's run (`TWIN_FIGURES`)."""

    def __init__(self) -> None:
        self.latencies: list[float] = []
        self.first: float | None = None
        self.last: float | None = None

    def add(self, record: Record) -> None:
        if not record.text_stamps:
            return
        self.latencies.append((record.text_stamps[-1] - record.exact_start) / 1e6)
        start = record.exact_start
        self.first = start if self.first is None else min(self.first, start)
        end = record.text_stamps[-1]
        self.last = end if self.last is None else max(self.last, end)

    def figures(self) -> dict[str, float]:
        if not self.latencies or self.first is None or self.last is None:
            return {}
        values = self.latencies
        out = {
            f"e2e_{label}_ms": tool_percentile(values, QUANTILE_OF[label])
            for label in ("p50", "p90", "p95", "p99")
        }
        out["request_count"] = len(values)
        if self.last > self.first:
            out["qps"] = len(values) / ((self.last - self.first) / 1e9)
        return out


@dataclass(frozen=True)
class Record:
    """One request as GenAI-Perf reads it (the parser's and the lint's one reading)."""

    start: float  # ns, the request's timestamp
    arrivals: list[float]  # ns, the responses that carry tokens
    output_tokens: int
    basis: str  # how output_tokens was counted: USAGE | MAX_TOKENS | EVENTS
    prompt_tokens: float | None
    payload: dict  # the request's JSON body ({} when the file does not have it)
    # ns, the responses GenAI-Perf keeps: those without text trimmed from both ends; these and
    # `exact_start` keep the file's integers (a double holds ns since 1970 to 256 ns only)
    text_stamps: list[int | float] = field(default_factory=list)
    exact_start: int | float = 0

    @property
    def requested_output(self) -> float | None:
        return _max_tokens(self.payload)


def records(ctx: Ctx, experiment: dict, service_kind: str) -> list[Record]:
    """Every request of one experiment, validated (errors name the request and key)."""
    out = []
    for j, request in enumerate(ctx.array(experiment, "requests")):
        rctx = ctx.at("requests").at(j)
        if not isinstance(request, dict):
            raise rctx.error("expected an object")
        start = rctx.num(request, "timestamp", required=True)
        stamps = rctx.at("response_timestamps").numbers(rctx.array(request, "response_timestamps"))
        outputs = rctx.array(request, "response_outputs")
        if len(stamps) != len(outputs):
            raise rctx.error(
                f"{len(stamps)} response_timestamps but {len(outputs)} response_outputs"
            )
        arrivals, events, reported, texts = _token_arrivals(rctx, stamps, outputs, service_kind)
        for k, stamp in enumerate(arrivals):
            if stamp < start:
                raise (
                    rctx.at("response_timestamps")
                    .at(k)
                    .error("a response arrives before its request was sent")
                )
        payload = _payload(request.get("request_inputs"))
        limit = _max_tokens(payload)
        if "completion_tokens" in reported:
            tokens, basis = int(reported["completion_tokens"]), USAGE
        elif reported.get("finish_reason") == "length" and limit is not None:
            tokens, basis = int(limit), MAX_TOKENS
        else:
            tokens, basis = events, EVENTS
        out.append(
            Record(
                start=start,
                arrivals=arrivals,
                output_tokens=tokens,
                basis=basis,
                prompt_tokens=reported.get("prompt_tokens"),
                payload=payload,
                text_stamps=_trimmed(_exact(request["response_timestamps"], stamps), texts),
                exact_start=_exact([request["timestamp"]], [start])[0],
            )
        )
    return out


def _exact(raw: list, checked: list) -> list:
    """The file's own integers where it wrote integers (validated already as `checked`)."""
    return [
        value if isinstance(value, int) and not isinstance(value, bool) else number
        for value, number in zip(raw, checked, strict=True)
    ]


def _trimmed(stamps: list, texts: list[bool]) -> list[int | float]:
    """The response times GenAI-Perf keeps: responses without text dropped from both ends."""
    first = next((i for i, text in enumerate(texts) if text), None)
    if first is None:
        return []
    last = max(i for i, text in enumerate(texts) if text)
    return stamps[first : last + 1]


def _token_arrivals(
    ctx: Ctx, stamps: list[float | None], outputs: list, service_kind: str
) -> tuple[list[float], int, dict, list[bool]]:
    """The timestamps of the responses that carry tokens, how many token events they hold,
    what the server reported (`reported`: its usage counts, the answer's finish_reason), and
    whether each response has text (what GenAI-Perf keeps)."""
    arrivals: list[float] = []
    events = 0
    reported: dict = {}
    texts: list[bool] = []
    for k, (stamp, output) in enumerate(zip(stamps, outputs, strict=True)):
        octx = ctx.at("response_outputs").at(k)
        if not isinstance(output, dict):
            raise octx.error("expected an object")
        if stamp is None:
            raise ctx.at("response_timestamps").at(k).error("expected a number")
        if service_kind == "triton":
            found = int(isinstance(output.get("text_output"), str))
            texts.append(bool(output.get("text_output")))
        else:
            found = _openai_tokens(octx, output.get("response"), reported, texts)
        if found:
            arrivals.append(stamp)
            events += found
    return arrivals, events, reported, texts


def _openai_tokens(ctx: Ctx, response, reported: dict, texts: list[bool]) -> int:
    """Token events in one recorded response: a server-sent event, several merged into one
    (perf_analyzer sometimes receives them together), or a whole JSON answer. The usage counts
    an event states, and the answer's finish_reason, go into `reported`."""
    if not isinstance(response, str):
        raise ctx.at("response").error("expected a string")
    found = 0
    has_text = False
    for event in response.strip().split("\n\n"):
        body = event.strip()
        if body.startswith(SSE_DATA):
            body = body[len(SSE_DATA) :].strip()
        if not body or body == "[DONE]":
            continue
        try:
            chunk = json.loads(body)
        except ValueError:
            raise ctx.at("response").error(f"not a JSON event: {body[:60]!r}") from None
        if not isinstance(chunk, dict):
            raise ctx.at("response").error("expected a JSON object in the event")
        choices = chunk.get("choices") if isinstance(chunk.get("choices"), list) else []
        found += sum(map(_is_token, choices))
        has_text = has_text or any(map(_has_text, choices))
        for choice in choices:
            reason = choice.get("finish_reason") if isinstance(choice, dict) else None
            if isinstance(reason, str):
                reported["finish_reason"] = reason
        counts = chunk.get("usage")
        if isinstance(counts, dict):
            for key in ("completion_tokens", "prompt_tokens"):
                value = ctx.at("response").at("usage").number(counts.get(key))
                if value:
                    reported[key] = value
    texts.append(has_text)
    return found


def _has_text(choice) -> bool:
    """Whether a choice has text, as GenAI-Perf reads it (`text`, `delta.content`,
    `message.content`): GenAI-Perf trims responses without it."""
    if not isinstance(choice, dict):
        return False
    if isinstance(choice.get("text"), str):
        return bool(choice["text"])
    return any(
        isinstance(holder, dict) and isinstance(holder.get("content"), str) and holder["content"]
        for holder in (choice.get("delta"), choice.get("message"))
    )


def _is_token(choice) -> bool:
    """Whether one streamed choice delivers a token.

    A completion chunk (`text`) does, its text empty or not: engines send one per token, and a
    token that ends inside a character decodes to "" (in a run of the e2e model, 28 of 376
    answers of 32 tokens had one, the last token with finish_reason "length" among them), which
    a count of texts would miss. A chat chunk (`delta`) or a whole answer (`message`) does when
    it has content (or reasoning): the first chunk, which only names the role, does not."""
    if not isinstance(choice, dict):
        return False
    if isinstance(choice.get("text"), str):
        return True
    for holder in (choice.get("delta"), choice.get("message")):
        if isinstance(holder, dict) and any(
            isinstance(holder.get(key), str) and holder[key]
            for key in ("content", "reasoning_content", "reasoning")
        ):
            return True
    return False


def _window_span(ctx: Ctx, experiment: dict) -> float | None:
    """Seconds from the first measurement window's start to the last one's end: the time
    perf_analyzer counted the file's requests over (its printed throughput is the requests over
    this span). None when the file has no windows."""
    bounds = ctx.array(experiment, "window_boundaries", required=False)
    if not bounds or len(bounds) < 2:
        return None
    stamps = ctx.at("window_boundaries").numbers(bounds)
    if any(b is None for b in stamps) or stamps != sorted(stamps):
        raise ctx.at("window_boundaries").error("expected increasing timestamps")
    return (stamps[-1] - stamps[0]) / 1e9 or None


def _max_tokens(payload: dict) -> float | None:
    """The request's `max_tokens` (or `max_completion_tokens`)."""
    for key in ("max_tokens", "max_completion_tokens"):
        value = payload.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def _payload(inputs) -> dict:
    """The request's JSON body (OpenAI); {} when the file does not have one."""
    if not isinstance(inputs, dict) or not isinstance(inputs.get("payload"), str):
        return {}
    try:
        payload = json.loads(inputs["payload"])
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


register(
    LoadTestFormat(
        name=FORMAT,
        priority=22,
        label="GenAI-Perf per-request export",
        parse=parse,
        looks_like=looks_like,
        required=("experiments",),
        signature=("experiments", "service_kind", "endpoint", "version"),
        filename_hints=("profile_export.json",),
    )
)
