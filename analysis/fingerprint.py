"""A run's workload fingerprint, and whether two fingerprints describe the same workload.

Two runs with the same mean output length can still apply different workloads (every request
200 tokens, or half 20 and half 380): latency percentiles move with the length distribution, not
with its mean. So a fingerprint keeps length *quantiles* (P25, P50, P75, P90) of prompts and
outputs, beside the load (concurrency or rate), the dataset, `ignore_eos` and streaming.

Comparisons go through `differences` (one sentence per difference, empty = compatible) and
`distance` (the largest log-ratio between matching length statistics, the number the threshold
applies to). docs/lint.md gives the thresholds and why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

LENGTH_QUANTILES = {"p25": 0.25, "p50": 0.5, "p75": 0.75, "p90": 0.9}

# Two length statistics match when their ratio is within this factor (|ln ratio| <= ln 1.2), or
# within SAMPLING_Z standard errors of sampling noise when that is wider (short runs of a
# realistic dataset: a P25 over 100 requests moves ~8% run to run). The quantiles of a
# fixed-length and a spread workload with one mean differ by 40% or more.
QUANTILE_RATIO = 1.20
# Means within 10% (the rule before fingerprints), or SAMPLING_Z standard errors when wider.
MEAN_TOLERANCE = 0.10
SAMPLING_Z = 4.0
# Differences below this many tokens are rounding, whatever the ratio (16 vs 18 tokens).
ABSOLUTE_SLACK_TOKENS = 2.0


@dataclass(frozen=True)
class Lengths:
    """A token-count distribution: quantiles (tokens) and the mean and standard deviation."""

    quantiles: dict[str, float] = field(default_factory=dict)
    mean: float | None = None
    std: float | None = None
    basis: str = ""  # "per request", "reported quantiles", "mean and std"
    count: int | None = None  # requests the statistics rest on (their sampling noise)

    @classmethod
    def from_values(cls, values: Sequence[float]) -> Lengths | None:
        data = sorted(float(v) for v in values if v is not None and math.isfinite(v))
        if not data:
            return None
        mean = sum(data) / len(data)
        std = math.sqrt(sum((v - mean) ** 2 for v in data) / len(data))
        return cls(
            quantiles={name: quantile(data, q) for name, q in LENGTH_QUANTILES.items()},
            mean=mean,
            std=std,
            basis="per request",
            count=len(data),
        )

    def to_dict(self) -> dict:
        return {
            "quantiles": dict(self.quantiles),
            "mean": self.mean,
            "std": self.std,
            "basis": self.basis,
            "count": self.count,
        }

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Lengths | None:
        if not data:
            return None
        return cls(
            quantiles={k: float(v) for k, v in (data.get("quantiles") or {}).items()},
            mean=data.get("mean"),
            std=data.get("std"),
            basis=data.get("basis") or "",
            count=data.get("count"),
        )

    def log_se(self, name: str) -> float:
        """Standard error of ln(quantile `name`) from sampling: the slope of ln(length) against
        the quantile level, read off the neighbouring stored quantiles, times sqrt(p(1-p)/n).
        0 when the count or the neighbours are unknown (the fixed tolerance then applies)."""
        if not self.count or name not in self.quantiles:
            return 0.0
        points = sorted(
            (LENGTH_QUANTILES[n], math.log(v))
            for n, v in self.quantiles.items()
            if n in LENGTH_QUANTILES and v > 0
        )
        p = LENGTH_QUANTILES[name]
        lower = [pt for pt in points if pt[0] < p]
        upper = [pt for pt in points if pt[0] > p]
        here = next((pt for pt in points if pt[0] == p), None)
        if here is None:
            return 0.0
        left = lower[-1] if lower else here
        right = upper[0] if upper else here
        if right[0] == left[0]:
            return 0.0
        slope = (right[1] - left[1]) / (right[0] - left[0])
        return slope * math.sqrt(p * (1 - p) / self.count)

    def mean_se(self) -> float:
        """Standard error of the mean, relative to it; 0 when unknown."""
        if not self.count or not self.mean or self.std is None:
            return 0.0
        return self.std / self.mean / math.sqrt(self.count)


def quantile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolation quantile (numpy's default) of already sorted values."""
    if len(sorted_values) == 1:
        return sorted_values[0]
    position = q * (len(sorted_values) - 1)
    low = math.floor(position)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (position - low)


@dataclass(frozen=True)
class Fingerprint:
    prompt: Lengths | None = None
    output: Lengths | None = None
    concurrency: int | None = None
    request_rate: float | None = None  # req/s; math.inf = as fast as possible (closed loop)
    dataset: str | None = None
    ignore_eos: bool | None = None
    streaming: bool | None = None

    def to_dict(self) -> dict:
        rate = self.request_rate
        return {
            "prompt": self.prompt.to_dict() if self.prompt else None,
            "output": self.output.to_dict() if self.output else None,
            "concurrency": self.concurrency,
            "request_rate": "inf" if rate is not None and math.isinf(rate) else rate,
            "dataset": self.dataset,
            "ignore_eos": self.ignore_eos,
            "streaming": self.streaming,
        }

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Fingerprint:
        data = data or {}
        rate = data.get("request_rate")
        return cls(
            prompt=Lengths.from_dict(data.get("prompt")),
            output=Lengths.from_dict(data.get("output")),
            concurrency=data.get("concurrency"),
            request_rate=math.inf if rate == "inf" else rate,
            dataset=data.get("dataset"),
            ignore_eos=data.get("ignore_eos"),
            streaming=data.get("streaming"),
        )

    def summary(self) -> str:
        """One line for pages and tables: "c=16, output P25/P50/P90 180/200/240 tokens"."""
        parts = []
        if self.concurrency is not None:
            parts.append(f"c={self.concurrency}")
        if self.request_rate is not None:
            rate = self.request_rate
            parts.append("rate unlimited" if math.isinf(rate) else f"{rate:g} req/s")
        for what, lengths in (("prompt", self.prompt), ("output", self.output)):
            if lengths is None:
                continue
            qs = [lengths.quantiles.get(n) for n in ("p25", "p50", "p90")]
            if all(q is not None for q in qs):
                parts.append(f"{what} P25/P50/P90 {'/'.join(f'{q:.0f}' for q in qs)} tokens")
            elif lengths.mean is not None:
                parts.append(f"{what} mean {lengths.mean:.0f} tokens")
        for name, value in (
            ("dataset", self.dataset),
            ("ignore_eos", self.ignore_eos),
            ("streaming", self.streaming),
        ):
            if value is not None:
                parts.append(f"{name} {value}")
        return ", ".join(parts) or "not recorded"


@dataclass(frozen=True)
class Tolerance:
    quantile_ratio: float = QUANTILE_RATIO
    mean_tolerance: float = MEAN_TOLERANCE
    absolute_slack: float = ABSOLUTE_SLACK_TOKENS
    z: float = SAMPLING_Z


def _ratio_apart(a: float, b: float, ratio: float, slack: float, noise: float = 0.0) -> bool:
    """Whether a and b differ beyond `ratio`, `slack` tokens and `noise` (in ln units)."""
    if abs(a - b) <= slack:
        return False
    if a <= 0 or b <= 0:
        return True
    return abs(math.log(a / b)) > max(math.log(ratio), noise)


def length_differences(
    what: str, base: Lengths | None, cand: Lengths | None, tol: Tolerance = Tolerance()
) -> list[str]:
    """Sentences naming where two length distributions part (empty: compatible)."""
    if base is None and cand is None:
        return []
    if base is None or cand is None:
        return [
            f"{what} length recorded on one side only: baseline {_tokens(base)}, "
            f"candidate {_tokens(cand)}"
        ]
    reasons = []
    means = base.mean is not None and cand.mean is not None
    noise = tol.z * math.hypot(base.mean_se(), cand.mean_se())
    if means and abs(cand.mean - base.mean) > max(
        max(tol.mean_tolerance, noise) * base.mean, tol.absolute_slack
    ):
        reasons.append(
            f"different mean {what} length: baseline {base.mean:.0f} tokens, candidate "
            f"{cand.mean:.0f} tokens ({cand.mean / base.mean - 1:+.0%}), tolerance "
            f"{max(tol.mean_tolerance, noise):.0%}"
        )
    for name in LENGTH_QUANTILES:
        b, c = base.quantiles.get(name), cand.quantiles.get(name)
        if b is None or c is None:
            continue
        noise = tol.z * math.hypot(base.log_se(name), cand.log_se(name))
        if _ratio_apart(b, c, tol.quantile_ratio, tol.absolute_slack, noise):
            reasons.append(
                f"different {what} length {name.upper()}: baseline {b:.0f} tokens, candidate "
                f"{c:.0f} tokens (x{c / b if b else math.inf:.2f}), tolerance "
                f"x{max(tol.quantile_ratio, math.exp(noise)):.2f}"
            )
    return reasons


def load_differences(
    concurrency: tuple[int | None, int | None],
    request_rate: tuple[float | None, float | None],
    *,
    unlimited: str = "unlimited",
) -> list[str]:
    """Why two runs' applied load differs (baseline, candidate): concurrency exactly, request
    rate to 1e-6; a value recorded on one side only differs. `unlimited` names an infinite rate."""
    reasons = []
    if concurrency[0] != concurrency[1]:
        reasons.append(
            f"different concurrency: baseline {_text(concurrency[0])}, "
            f"candidate {_text(concurrency[1])}"
        )
    b_rate, c_rate = request_rate
    if (b_rate is None) != (c_rate is None) or (
        b_rate is not None and c_rate is not None and not math.isclose(b_rate, c_rate, rel_tol=1e-6)
    ):
        reasons.append(
            f"different request rate: baseline {_rate(b_rate, unlimited)}, "
            f"candidate {_rate(c_rate, unlimited)}"
        )
    return reasons


def differences(base: Fingerprint, cand: Fingerprint, tol: Tolerance = Tolerance()) -> list[str]:
    """Why `cand` does not apply `base`'s workload, one sentence each; empty means compatible.

    Load must match exactly (concurrency, rate); lengths by quantiles and mean; dataset,
    `ignore_eos` and streaming when both sides record them (a tool that does not write them
    cannot be held to them).
    """
    reasons = load_differences(
        (base.concurrency, cand.concurrency), (base.request_rate, cand.request_rate)
    )
    reasons += length_differences("prompt", base.prompt, cand.prompt, tol)
    reasons += length_differences("output", base.output, cand.output, tol)
    for name in ("dataset", "ignore_eos", "streaming"):
        b, c = getattr(base, name), getattr(cand, name)
        if b is not None and c is not None and b != c:
            reasons.append(f"different {name}: baseline {b}, candidate {c}")
    return reasons


def distance(base: Fingerprint, cand: Fingerprint) -> float:
    """The largest |ln ratio| between matching length statistics (quantiles and means); inf when
    the load, dataset, ignore_eos or streaming differ. Compatible means <= ln(QUANTILE_RATIO)."""
    lengths = (
        "different mean prompt",
        "different mean output",
        "different prompt",
        "different output",
        "prompt",
        "output",
    )
    if any(not r.startswith(lengths) for r in differences(base, cand)):
        return math.inf  # the load, dataset, ignore_eos or streaming differ
    worst = 0.0
    for b, c in ((base.prompt, cand.prompt), (base.output, cand.output)):
        if b is None or c is None:
            continue
        pairs = [(b.quantiles.get(n), c.quantiles.get(n)) for n in LENGTH_QUANTILES]
        pairs.append((b.mean, c.mean))
        for x, y in pairs:
            if x is not None and y is not None and x > 0 and y > 0:
                worst = max(worst, abs(math.log(y / x)))
    return worst


def _tokens(lengths: Lengths | None) -> str:
    if lengths is None or lengths.mean is None:
        return "not recorded"
    return f"{lengths.mean:g} tokens"


def _text(value: object) -> str:
    return "not recorded" if value is None else str(value)


def _rate(rate: float | None, unlimited: str = "unlimited") -> str:
    if rate is None:
        return "not recorded"
    return unlimited if math.isinf(rate) else f"{rate:g} req/s"


def production_drift(
    what: str, baseline: Lengths | None, live: Lengths | None, tol: Tolerance = Tolerance()
) -> str:
    """ "output length P50 180 -> 310 tokens" when live lengths part from the baseline's by the
    fingerprint's rule (quantiles within x1.2 or sampling noise, means within 10%); "" when they
    agree or either side is unknown. The statistic named is the median, or the one that moved
    clearly more."""
    if baseline is None or live is None or not length_differences(what, baseline, live, tol):
        return ""
    pairs = [
        (name.upper(), baseline.quantiles[name], live.quantiles[name])
        for name in LENGTH_QUANTILES
        if name in baseline.quantiles and name in live.quantiles
    ]
    if baseline.mean is not None and live.mean is not None:
        pairs.append(("mean", baseline.mean, live.mean))
    pairs = [(n, b, c) for n, b, c in pairs if b > 0 and c > 0]
    if not pairs:
        return ""

    def moved(pair: tuple[str, float, float]) -> float:
        return abs(math.log(pair[2] / pair[1]))

    # The median speaks for the distribution unless another statistic moved clearly more.
    worst = max(pairs, key=moved)
    median = next((p for p in pairs if p[0] == "P50"), None)
    name, b, c = median if median and moved(median) >= 0.9 * moved(worst) else worst
    return f"{what} length {name} {b:,.0f} -> {c:,.0f} tokens"
