"""The workload shape of a run: what load it applied, and why two shapes differ.

Runs of different shapes cannot be compared; `check_number` is the gate's one check of an input
number.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields

from analysis import fingerprint


@dataclass(frozen=True)
class WorkloadShape:
    """What load a run applied. Runs of different shapes cannot be compared."""

    concurrency: int | None = None
    request_rate: float | None = None  # req/s; math.inf = "as fast as possible"
    prompt_tokens_mean: float | None = None
    output_tokens_mean: float | None = None

    def __post_init__(self) -> None:
        if self.concurrency is not None and (
            isinstance(self.concurrency, bool)
            or not isinstance(self.concurrency, int)
            or self.concurrency < 1
        ):
            raise ValueError(f"concurrency must be a positive integer (got {self.concurrency!r})")
        if self.request_rate is not None:
            check_number("request_rate", self.request_rate, allow_inf=True)
            if self.request_rate <= 0:
                raise ValueError(f"request_rate must be positive (got {self.request_rate!r})")
        for name in ("prompt_tokens_mean", "output_tokens_mean"):
            value = getattr(self, name)
            if value is not None:
                check_number(name, value)
                if value < 0:
                    raise ValueError(f"{name} must not be negative (got {value!r})")

    @classmethod
    def from_record(cls, values: Mapping[str, object]) -> WorkloadShape:
        """Build from a run record's fields (extra keys ignored)."""
        return cls(**{f.name: values.get(f.name) for f in fields(cls)})


def shape_differences(
    baseline: WorkloadShape, candidate: WorkloadShape, *, length_tolerance: float = 0.10
) -> list[str]:
    """Why the two runs' workloads differ, one sentence each; an empty list means the same shape.

    Concurrency and request rate must match exactly; mean prompt and output lengths within
    `length_tolerance` (relative to the baseline). A field recorded on one side only is a
    difference: the gate cannot vouch for a shape it does not know.
    """
    if length_tolerance < 0:
        raise ValueError("length_tolerance must not be negative")
    reasons = fingerprint.load_differences(
        (baseline.concurrency, candidate.concurrency),
        (baseline.request_rate, candidate.request_rate),
        unlimited="unlimited (inf)",
    )
    for name, what in (("prompt_tokens_mean", "prompt"), ("output_tokens_mean", "output")):
        b, c = getattr(baseline, name), getattr(candidate, name)
        if b is None and c is None:
            continue
        if b is None or c is None:
            reasons.append(
                f"mean {what} length recorded on one side only: baseline "
                f"{_tokens_text(b)}, candidate {_tokens_text(c)}"
            )
            continue
        differs = abs(c - b) > length_tolerance * b if b else c != 0
        if differs:
            change = f" ({(c - b) / b:+.0%})" if b else ""
            reasons.append(
                f"different mean {what} length: baseline {_tokens_text(b)}, candidate "
                f"{_tokens_text(c)}{change}, tolerance {length_tolerance:.0%}"
            )
    return reasons


def _tokens_text(value: float | None) -> str:
    return "not recorded" if value is None else f"{value:g} tokens"


def check_number(name: str, value: object, *, allow_inf: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number (got {value!r})")
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValueError(f"{name} must be a finite number (got {value!r})")
