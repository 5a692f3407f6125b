"""A requested output length not honoured: the run asked for N tokens per request (a fixed
length, or `ignore_eos` / GenAI-Perf's deterministic output) and the outputs are shorter, so its
TPOT and throughput describe a lighter workload than the one named."""

from __future__ import annotations

import math

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "output_length"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    asked = view.requested_output_tokens
    got = view.output.mean if view.output and view.output.mean is not None else None
    if got is None:
        got = view.fields.get("output_tokens_mean")
    if not asked or got is None or got >= t.output_honoured_share * asked:
        return []
    fixed = view.requested_output_std == 0
    if not fixed and _within_draw(asked, got, view):
        return []
    forced = bool(view.ignore_eos)
    # A forced length (ignore_eos, deterministic output) that came out short is a broken run.
    # Unforced, the length is a cap the model may stop before (GenAI-Perf, vLLM's random
    # dataset and llmperf only set max_tokens unless told to ignore EOS): worth a warning.
    severity = Severity.REFUSE if forced else Severity.WARN
    how = "with ignore_eos" if forced else ("a fixed length" if fixed else "a mean")
    return [
        Finding(
            NAME,
            severity,
            f"requested {asked:g} output tokens per request ({how}), got a mean of {got:.0f} "
            f"({got / asked:.0%}; below {t.output_honoured_share:.0%})",
            "pass --ignore-eos (vLLM) or --extra-inputs ignore_eos:true (GenAI-Perf), and make "
            "sure the server's max_tokens and max_model_len allow the requested length",
            {
                "requested": asked,
                "achieved_mean": round(got, 2),
                "forced": forced,
                "fixed": fixed,
                "output_min": view.output_min,
            },
        )
    ]


def _within_draw(asked: float, got: float, view: RunView) -> bool:
    """Lengths drawn at random (a range around the asked one) have a mean that itself varies
    from run to run: a shortfall within three standard errors of it is the draw, not the
    server stopping early."""
    std, count = view.requested_output_std, view.count
    if not std or not count:
        return False
    return asked - got <= 3 * std / math.sqrt(count)


register(Check(NAME, "requested fixed output length not honoured", run, order=30))
