"""What the gate reads of a stored run: its workload shape and fingerprint, and per-request
samples rebuilt from its sketches (see `loadtests.gate`)."""

from __future__ import annotations

import math

import numpy as np
from ddsketch import DDSketch

from analysis import gate, sketches
from analysis.fingerprint import Fingerprint, Lengths
from analysis.fingerprint import differences as fingerprint_differences
from dossiers.models import Baseline
from loadtests.importing import (
    measured_values,
)
from loadtests.models import LoadTest, source_run

SAMPLE_FAMILIES = ("ttft", "tpot", "e2e")


def shape_of(run: LoadTest | Baseline) -> gate.WorkloadShape:
    """The workload a run applied; a promoted baseline takes its load test's (rate inf known)."""
    if isinstance(run, Baseline):
        run = source_run(run) or run
    rate = run.request_rate
    if isinstance(run, LoadTest) and run.request_rate_inf:
        rate = math.inf
    return gate.WorkloadShape(
        concurrency=run.concurrency,
        request_rate=rate,
        prompt_tokens_mean=run.prompt_tokens_mean,
        output_tokens_mean=run.output_tokens_mean,
    )


def fingerprint_of(run: LoadTest | Baseline) -> Fingerprint:
    """The run's stored workload fingerprint; a run imported before fingerprints (or a baseline
    typed in by hand) gets one from its means, so it compares by the old 10% rule."""
    if isinstance(run, Baseline):
        run = source_run(run) or run
    if isinstance(run, LoadTest) and run.fingerprint:
        return Fingerprint.from_dict(run.fingerprint)
    shape = shape_of(run)

    def lengths(mean: float | None, std: float | None) -> Lengths | None:
        return None if mean is None else Lengths(mean=mean, std=std, basis="mean and std")

    return Fingerprint(
        prompt=lengths(shape.prompt_tokens_mean, run.prompt_tokens_std),
        output=lengths(shape.output_tokens_mean, run.output_tokens_std),
        concurrency=shape.concurrency,
        request_rate=shape.request_rate,
    )


def workload_differences(base: LoadTest | Baseline, cand: LoadTest | Baseline) -> list[str]:
    """Why two runs did not apply the same workload (empty: comparable), by fingerprint."""
    return fingerprint_differences(fingerprint_of(base), fingerprint_of(cand))


def shape_text(shape: gate.WorkloadShape) -> str:
    parts = []
    if shape.concurrency is not None:
        parts.append(f"concurrency {shape.concurrency}")
    if shape.request_rate is not None:
        rate = "unlimited" if math.isinf(shape.request_rate) else f"{shape.request_rate:g} req/s"
        parts.append(f"rate {rate}")
    if shape.prompt_tokens_mean is not None:
        parts.append(f"prompt ~{shape.prompt_tokens_mean:.0f} tokens")
    if shape.output_tokens_mean is not None:
        parts.append(f"output ~{shape.output_tokens_mean:.0f} tokens")
    return ", ".join(parts) or "not recorded"


def approximate_values(sketch: DDSketch) -> np.ndarray:
    """Per-request values rebuilt from a sketch: each bin's value, repeated by its count."""
    mapping = sketch._mapping
    store = sketch._store
    values: list[np.ndarray] = []
    if sketch._zero_count:
        values.append(np.zeros(round(sketch._zero_count)))
    if store.count:
        start = store.min_key - store.offset
        bins = store.bins[start : start + store.max_key - store.min_key + 1]
        for key, count in enumerate(bins, start=store.min_key):
            if count:
                values.append(np.full(round(count), mapping.value(key)))
    if not values:
        return np.array([], dtype=float)
    # Bin values may fall a hair outside the exact extremes the sketch keeps.
    return np.clip(np.concatenate(values), sketch._min, sketch._max)


def samples_of(run: LoadTest | Baseline | None) -> dict[str, np.ndarray]:
    """Approximate per-request ms by family, from the (source) load test's sketches."""
    if isinstance(run, Baseline):
        run = source_run(run)
    if run is None:
        return {}
    return {
        row.family: approximate_values(sketches.loads(bytes(row.sketch)))
        for row in run.sketches.all()
        if row.family in SAMPLE_FAMILIES and row.count
    }


def run_data(run: LoadTest | Baseline) -> gate.RunData:
    """What the gate needs of a stored run: values, per-request samples, how it was loaded."""
    shape = shape_of(run)
    closed_loop = shape.request_rate is not None and math.isinf(shape.request_rate)
    mean, std = run.output_tokens_mean, run.output_tokens_std
    return gate.RunData(
        values=measured_values(run),
        samples=samples_of(run),
        requests=run.request_count,
        concurrency=shape.concurrency if closed_loop else None,
        output_tokens_cv=std / mean if mean and std is not None else None,
    )
