"""The lint's thresholds: one dataclass with the defaults, overridable by the `PERFHUB_LINT`
setting (a dict of these names, or the environment variable of the same name as JSON).
docs/lint.md gives each default's reason.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace


@dataclass(frozen=True)
class Thresholds:
    # too_short: a reported quantile q needs this many requests beyond it (n x (1 - q)); one
    # is the minimum-count rule the dossier applies to live percentiles (analysis.percentiles).
    min_tail_samples: float = 1.0
    # tiny_outputs: requests generating this many tokens or fewer measure prefill, not decode.
    max_tiny_output_tokens: float = 2.0
    # output_length: achieved mean output below this share of the requested length.
    output_honoured_share: float = 0.90
    # cold_start: the first requests' median TTFT above this multiple of the rest's P99.
    cold_start_ratio: float = 3.0
    cold_start_head_share: float = 0.01  # the head is this share of requests (at least 3)
    cold_start_min_requests: int = 20
    # concurrency: achieved (Little's law) over configured; warn below the first, refuse below
    # the second.
    concurrency_warn_share: float = 0.70
    concurrency_refuse_share: float = 0.35
    # rate: achieved over configured request rate (open loop); refuse below.
    rate_refuse_share: float = 0.70
    # failed_share: failed / (failed + completed); warn above the first, refuse above the second.
    failed_warn_share: float = 0.01
    failed_refuse_share: float = 0.05
    # unfinished: requests still running at the end / all requests; warn, refuse above.
    unfinished_warn_share: float = 0.10
    unfinished_refuse_share: float = 0.25
    # duration: completed / reported rate vs the duration, relative gap allowed.
    duration_tolerance: float = 0.10
    # duration (Little's law): requests in flight implied by n x mean latency / duration may
    # exceed the concurrency (or the tool's measured concurrency) by this share; ramp-up, drain
    # and per-request client overhead move it by up to ~30% on clean files.
    littles_law_tolerance: float = 0.50
    # impossible: relative slack for rounding when comparing percentiles.
    ordering_slack: float = 0.01

    @classmethod
    def with_overrides(cls, overrides: dict | None) -> Thresholds:
        """Defaults with `overrides` applied; an unknown name or a non-number is a ValueError."""
        base = cls()
        if not overrides:
            return base
        names = {f.name: f.type for f in fields(cls)}
        clean = {}
        for name, value in overrides.items():
            if name not in names:
                raise ValueError(f"PERFHUB_LINT: unknown threshold {name!r}")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValueError(f"PERFHUB_LINT: {name} must be a number, got {value!r}")
            clean[name] = int(value) if names[name] == "int" else float(value)
        return replace(base, **clean)


def from_settings() -> Thresholds:
    from django.conf import settings

    return Thresholds.with_overrides(getattr(settings, "PERFHUB_LINT", None))
