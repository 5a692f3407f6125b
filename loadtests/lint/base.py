"""What a lint check sees (`RunView`), what it says (`Finding`), and how it is described (`Check`).

Pure Python: a check reads one parsed run (and, for file-level checks, its neighbours in the
file) and returns findings with the numbers that tripped it and the fix. The thresholds come in
as `Thresholds` so tests and the settings share one place (loadtests.lint.thresholds).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from analysis.fingerprint import Fingerprint, Lengths
from loadtests.formats import ParsedRun


class Severity(StrEnum):
    WARN = "warn"  # shown with the run; the run may still become a baseline
    REFUSE = "refuse"  # the run may not become a baseline without an explicit override


@dataclass(frozen=True)
class Finding:
    check: str  # the check's name, e.g. "too_short"
    severity: Severity
    message: str  # what is wrong, with the numbers
    fix: str  # what to change in the next run
    evidence: dict[str, Any] = field(default_factory=dict)  # the numbers that tripped it

    @property
    def refusing(self) -> bool:
        return self.severity == Severity.REFUSE

    def to_dict(self) -> dict:
        return {
            "check": self.check,
            "severity": str(self.severity),
            "message": self.message,
            "fix": self.fix,
            "evidence": self.evidence,
        }


@dataclass
class Timing:
    """One request's clock readings in seconds (any origin), in start order."""

    start: float | None
    first_token: float | None
    end: float | None


@dataclass
class RunView:
    """A parsed run plus what the file says beyond MeasuredRun's columns (read per format by
    loadtests.lint.inputs): per-request arrays, what was requested, the tool's own figures."""

    run: ParsedRun
    index: int = 0  # position in the file
    prompt: Lengths | None = None
    output: Lengths | None = None
    output_min: float | None = None
    output_max: float | None = None
    ttft_in_start_order_ms: list[float] | None = None
    timings: list[Timing] | None = None
    e2e_mean_ms: float | None = None
    ttft_max_ms: float | None = None  # the slowest request's TTFT, when only a summary exists
    requested_output_tokens: float | None = None
    requested_output_std: float | None = None
    ignore_eos: bool | None = None  # the tool was asked to force the output length
    dataset: str | None = None
    dataset_realistic: bool | None = None  # True: real prompts (ShareGPT, a file); False: synthetic
    streaming: bool | None = None
    reported_rate: float | None = None  # the tool's own completed requests per second
    reported_rate_key: str = ""
    started_at: float | None = None  # Unix seconds, when the file gives the run's clock
    ended_at: float | None = None
    incomplete: int | None = None  # requests still running when the run stopped (guidellm)
    observed_concurrency: float | None = None  # the tool's own measurement (guidellm)

    @property
    def fields(self) -> dict:
        return self.run.fields

    @property
    def count(self) -> int | None:
        n = self.run.fields.get("request_count")
        return None if n is None else int(n)

    def fingerprint(self) -> Fingerprint:
        f = self.run.fields
        rate = float("inf") if self.run.request_rate_inf else f.get("request_rate")
        concurrency = f.get("concurrency")
        return Fingerprint(
            prompt=self.prompt
            or _from_mean(f.get("prompt_tokens_mean"), f.get("prompt_tokens_std"), self.count),
            output=self.output
            or _from_mean(f.get("output_tokens_mean"), f.get("output_tokens_std"), self.count),
            concurrency=None if concurrency is None else int(concurrency),
            request_rate=rate,
            dataset=self.dataset,
            ignore_eos=self.ignore_eos,
            streaming=self.streaming,
        )


def _from_mean(mean: float | None, std: float | None, count: int | None) -> Lengths | None:
    if mean is None:
        return None
    return Lengths(mean=mean, std=std, basis="mean and std", count=count)


@dataclass(frozen=True)
class Check:
    """One lint rule. `run` returns findings for one run; a file-level check (`per_file=True`)
    gets every run of the file and returns one list per run."""

    name: str
    title: str  # what it looks for, for docs and pages
    run: Callable[..., Sequence[Finding]]
    per_file: bool = False
    order: int = 100  # findings are listed by it (the built-ins take 10-110)
