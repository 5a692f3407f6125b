"""Request-level latency distributions as DDSketch, mergeable over hosts and windows.

Every sketch PerfHub keeps uses one relative accuracy, 0.010830, so the bucket growth factor
gamma = (1 + a) / (1 - a) is 2^(1/32) to within 3e-9: the layout of Prometheus native histograms
at schema 5. Sketches with the same setting merge exactly (bin counts add), so the P99 of a
merge is the P99 of all the requests, never an average of P99s (docs/method.md).

Units: bin keys are ceil(32 x log2(value)), so they depend on the unit. Sketches to be merged
must share one; to take Prometheus native histogram buckets bin for bin the unit must be theirs,
seconds (a factor of 1000 shifts keys by 318.9, not a whole number of bins).

Serialized form (`dumps`): zlib over a small versioned little-endian binary record:
    b"PHDS", version (u8), relative accuracy (f64),
    count, sum, min, max, zero count (5 x f64),
    positive store, then negative store, each: first key (i32), bin count (u32), counts (f64 each)
Bins are written densely from the lowest to the highest non-empty key; zlib squeezes the gaps.
Count, sum, min and max travel in the blob too, so `loads` gives back the same quantiles; they
are also returned by `summary` for the columns kept beside the blob.
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Iterable, Sequence

import numpy as np
from ddsketch import DDSketch
from ddsketch.ddsketch import BaseDDSketch
from ddsketch.mapping import LogarithmicMapping
from ddsketch.store import DenseStore

from analysis.percentiles import STANDARD_QUANTILES, Percentile

RELATIVE_ACCURACY = 0.010830

_MAGIC = b"PHDS"
_VERSION = 1
_HEADER = struct.Struct("<4sBd")
_STATS = struct.Struct("<5d")
_STORE_HEADER = struct.Struct("<iI")
# A store spanning more keys than this covers over 10^100 of dynamic range: not a latency.
_MAX_BINS = 1 << 16
_NO_BINS = np.zeros(0)


def new_sketch() -> DDSketch:
    """An empty sketch with PerfHub's relative accuracy."""
    return DDSketch(relative_accuracy=RELATIVE_ACCURACY)


def from_values(values: Iterable[float]) -> DDSketch:
    """A sketch of request latencies (any unit, one per sketch); refuses NaN, inf and negatives."""
    sketch = new_sketch()
    for i, value in enumerate(values):
        v = float(value)
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"values[{i}]: a latency must be a finite number >= 0, got {value!r}")
        sketch.add(v)
    return sketch


def _check_compatible(sketch: object, where: str) -> None:
    if not isinstance(sketch, BaseDDSketch):
        raise ValueError(f"{where} is not a DDSketch but {type(sketch).__name__}")
    mapping = sketch._mapping
    if type(mapping) is not LogarithmicMapping or mapping.relative_accuracy != RELATIVE_ACCURACY:
        raise ValueError(
            f"{where} uses {type(mapping).__name__} with relative accuracy "
            f"{mapping.relative_accuracy!r}; only LogarithmicMapping at {RELATIVE_ACCURACY} "
            "merges exactly with PerfHub's sketches"
        )


def merge(sketches: Iterable[DDSketch]) -> DDSketch:
    """One sketch holding every request of the inputs (exact: bin counts add). Inputs are unchanged.

    Raises ValueError for a sketch with another mapping or accuracy, whose bins would not line up.
    """
    merged = new_sketch()
    for i, sketch in enumerate(sketches):
        _check_compatible(sketch, f"sketch {i}")
        merged.merge(sketch)
    return merged


def _store_bins(store: DenseStore) -> tuple[int, list[float]]:
    if store.count == 0:
        return 0, []
    start = store.min_key - store.offset
    return store.min_key, store.bins[start : start + store.max_key - store.min_key + 1]


def dumps(sketch: DDSketch) -> bytes:
    """Compact, compressed bytes for the sketch; `loads` gives back identical quantiles."""
    _check_compatible(sketch, "sketch")
    parts = [
        _HEADER.pack(_MAGIC, _VERSION, sketch._mapping.relative_accuracy),
        _STATS.pack(sketch.count, sketch.sum, sketch._min, sketch._max, sketch._zero_count),
    ]
    for store in (sketch._store, sketch._negative_store):
        first_key, bins = _store_bins(store)
        parts.append(_STORE_HEADER.pack(first_key, len(bins)))
        parts.append(struct.pack(f"<{len(bins)}d", *bins))
    return zlib.compress(b"".join(parts), 9)


def _read(raw: bytes, offset: int, layout: struct.Struct, what: str) -> tuple:
    if len(raw) < offset + layout.size:
        raise ValueError(f"sketch data is truncated in the {what}")
    return layout.unpack_from(raw, offset)


def _parse(data: bytes) -> tuple[tuple[float, ...], list[tuple[int, np.ndarray]]]:
    """(count, sum, min, max, zero count) and each store's (first key, bins) of a `dumps`
    record, validated. Raises ValueError for data that is not such a sketch."""
    try:
        raw = zlib.decompress(data)
    except (zlib.error, TypeError) as exc:
        raise ValueError(f"sketch data is not zlib-compressed: {exc}") from exc
    magic, version, accuracy = _read(raw, 0, _HEADER, "header")
    if magic != _MAGIC:
        raise ValueError("sketch data does not start with the PerfHub sketch marker")
    if version != _VERSION:
        raise ValueError(f"sketch data has format version {version}; this build reads {_VERSION}")
    if accuracy != RELATIVE_ACCURACY:
        raise ValueError(
            f"sketch data has relative accuracy {accuracy!r}, expected {RELATIVE_ACCURACY}"
        )
    offset = _HEADER.size
    stats = _read(raw, offset, _STATS, "summary")
    offset += _STATS.size
    stores = []
    for _ in range(2):  # positive, then negative
        first_key, n = _read(raw, offset, _STORE_HEADER, "store header")
        offset += _STORE_HEADER.size
        if n > _MAX_BINS:
            raise ValueError(f"sketch data claims {n} bins, more than {_MAX_BINS}")
        if len(raw) < offset + 8 * n:
            raise ValueError("sketch data is truncated in the bins")
        bins = np.frombuffer(raw, dtype="<f8", count=n, offset=offset) if n else _NO_BINS
        offset += 8 * n
        # One reduction: NaN and negatives (-inf too) fail it; +inf fails the count check.
        if n and not bins.min() >= 0:
            bad = ~np.isfinite(bins) | (bins < 0)
            i = int(np.argmax(bad))
            raise ValueError(
                f"sketch data has an invalid count {float(bins[i])!r} at key {first_key + i}"
            )
        stores.append((first_key, bins))
    if offset != len(raw):
        raise ValueError(f"sketch data has {len(raw) - offset} unexpected trailing bytes")
    count, zero_count = stats[0], stats[4]
    stored = sum(float(b.sum()) for _, b in stores if len(b)) + zero_count
    if not math.isfinite(stored) or not math.isclose(stored, count, rel_tol=1e-9, abs_tol=1e-9):
        raise ValueError(f"sketch data is inconsistent: count {count} but bins hold {stored}")
    return stats, stores


def _build(stats: tuple[float, ...], stores: list[tuple[int, np.ndarray]]) -> DDSketch:
    count, total, minimum, maximum, zero_count = stats
    sketch = new_sketch()
    for store, (first_key, bins) in zip(
        (sketch._store, sketch._negative_store), stores, strict=True
    ):
        _fill_store(store, first_key, bins)
    sketch._zero_count = zero_count
    sketch._count = count
    sketch._sum = total
    sketch._min = minimum
    sketch._max = maximum
    return sketch


def loads(data: bytes) -> DDSketch:
    """The sketch `dumps` wrote. Raises ValueError for data that is not such a sketch."""
    return _build(*_parse(data))


def merge_serialized(blobs: Iterable[bytes]) -> DDSketch:
    """`merge(loads(b) for b in blobs)`, without a sketch object per blob: the bins of every
    record are added as arrays, then one sketch is built. Same bins, count, sum, min and max,
    so the same quantiles; what evaluating thousands of services a minute needs (each of
    their windows merges a sketch per minute). Raises ValueError as `loads` does."""
    count = total = zero_count = 0.0
    minimum, maximum = math.inf, -math.inf
    pieces: list[list[tuple[int, np.ndarray]]] = [[], []]
    for blob in blobs:
        (n, s, lo, hi, zero), parsed = _parse(bytes(blob))
        if n == 0:
            continue  # an empty sketch adds nothing (and its min and max mean nothing)
        count += n
        total += s
        zero_count += zero
        minimum, maximum = min(minimum, lo), max(maximum, hi)
        for side, (first_key, bins) in zip(pieces, parsed, strict=True):
            if len(bins):
                side.append((first_key, bins))
    if count == 0:
        return new_sketch()
    stores: list[tuple[int, np.ndarray]] = []
    for side in pieces:
        if not side:
            stores.append((0, np.zeros(0)))
            continue
        first = min(k for k, _ in side)
        last = max(k + len(b) for k, b in side)
        acc = np.zeros(last - first)
        for k, b in side:
            acc[k - first : k - first + len(b)] += b
        stores.append((first, acc))
    return _build((count, total, minimum, maximum, zero_count), stores)


def _fill_store(store, first_key: int, bins: np.ndarray) -> None:
    """Set a store's bins (validated by `_parse`) in one step: dashboards load thousands of
    sketches, and adding bin by bin through `store.add` dominated their render time."""
    nonzero = np.flatnonzero(bins)
    if not len(nonzero):
        return
    lo, hi = int(nonzero[0]), int(nonzero[-1])
    store._extend_range(first_key + lo, first_key + hi)
    start = first_key + lo - store.offset
    store.bins[start : start + hi - lo + 1] = bins[lo : hi + 1].tolist()
    store.count += float(bins.sum())


def _clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def percentiles(sketch: DDSketch, qs: Sequence[float] = STANDARD_QUANTILES) -> list[Percentile]:
    """Quantiles of the sketch, each with the request count it rests on and its error bound.

    The bound is the sketch bucket holding the quantile, [value / (1 + a), value / (1 - a)]
    (so within a relative `a` of the value), narrowed to the exact min and max the sketch keeps;
    the value itself is clamped there too, since no quantile lies outside them.
    """
    count = round(sketch.count)
    if count == 0:
        return [Percentile(q=q, value=None, count=0, method="sketch") for q in qs]
    a = sketch._mapping.relative_accuracy
    low, high = sketch._min, sketch._max
    result = []
    for q in qs:
        if not 0 <= q <= 1:
            raise ValueError(f"quantile {q!r} is outside [0, 1]")
        estimate = sketch.get_quantile_value(q)
        edges = sorted((estimate / (1 + a), estimate / (1 - a)))
        result.append(
            Percentile(
                q=q,
                value=_clamp(estimate, low, high),
                count=count,
                lower=_clamp(edges[0], low, high),
                upper=_clamp(edges[1], low, high),
                method="sketch",
            )
        )
    return result


def summary(sketch: DDSketch) -> dict[str, float | int | None]:
    """Exact count, sum, min and max, for the columns stored beside the serialized sketch."""
    count = sketch.count
    empty = count == 0
    return {
        "count": int(count) if float(count).is_integer() else count,
        "sum": float(sketch.sum),
        "min": None if empty else float(sketch._min),
        "max": None if empty else float(sketch._max),
    }


def share_at_most(sketch: DDSketch, limit: float) -> float | None:
    """The share of the sketch's values at or below `limit` (within the sketch's relative
    accuracy), by bisection over its public quantile function; None for an empty sketch."""
    if sketch.count == 0:
        return None
    low, high = 0.0, 1.0
    if sketch.get_quantile_value(0.0) > limit:
        return 0.0
    if sketch.get_quantile_value(1.0) <= limit:
        return 1.0
    for _ in range(30):  # 2^-30 of the quantile range: far below any run's 1 / count
        mid = (low + high) / 2
        if sketch.get_quantile_value(mid) <= limit:
            low = mid
        else:
            high = mid
    return low
