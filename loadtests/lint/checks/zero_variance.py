"""Zero-variance output lengths under a dataset that claims to be realistic: real prompts give
outputs of many lengths, so every output the same length means forced lengths (ignore_eos) or a
cap hit by every request, and the run does not represent the dataset it names."""

from __future__ import annotations

from ..base import Check, Finding, RunView, Severity
from ..registry import register
from ..thresholds import Thresholds

NAME = "zero_variance"


def run(view: RunView, t: Thresholds) -> list[Finding]:
    if not view.dataset_realistic:
        return []
    std = view.output.std if view.output and view.output.std is not None else None
    if std is None:
        std = view.fields.get("output_tokens_std")
    same = view.output_min is not None and view.output_min == view.output_max
    if not (same or std == 0):
        return []
    length = (
        view.output_max if view.output_max is not None else view.fields.get("output_tokens_mean")
    )
    return [
        Finding(
            NAME,
            Severity.WARN,
            f"every output is {length:g} tokens long (std {std or 0:g}) under the dataset "
            f"“{view.dataset}”, which has outputs of many lengths: lengths were forced or "
            "every request hit the max_tokens cap",
            "drop ignore_eos / fixed output lengths for a realistic run, or raise max_tokens "
            "above the dataset's longest answer",
            {"output_tokens": length, "std": std, "dataset": view.dataset},
        )
    ]


register(Check(NAME, "zero-variance output lengths under a realistic dataset", run, order=80))
