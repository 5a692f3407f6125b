"""Output tokens per request at most 2: the server stopped at once (a wrong chat template, an
EOS on the first step, max_tokens 1), so the run measured prefill and nothing of decode."""

from __future__ import annotations

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "tiny_outputs"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    mean = view.fields.get("output_tokens_mean")
    median = view.output.quantiles.get("p50") if view.output else None
    limit = t.max_tiny_output_tokens
    if not ((mean is not None and mean <= limit) or (median is not None and median <= limit)):
        return []
    shown = mean if mean is not None else median
    return [
        Finding(
            NAME,
            Severity.REFUSE,
            f"output tokens per request: mean {_n(mean)}, median {_n(median)} "
            f"(at most {limit:g}): the run measured prefill, not generation",
            "set the output length (vLLM --random-output-len with --ignore-eos, GenAI-Perf "
            "--output-tokens-mean with --extra-inputs ignore_eos:true) and check the "
            "endpoint's max_tokens and chat template",
            {"output_tokens_mean": mean, "output_tokens_p50": median, "shown": shown},
        )
    ]


def _n(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


register(Check(NAME, "output tokens per request <= 2", run, order=20))
