"""Cost per million tokens and margin (docs/method.md).

cost per Mtok = GPU hourly price x GPUs x (1e6 / tokens per second) / 3600

Seed example: 10 per GPU-hour, 1 GPU, 2,000 tokens/s -> 500 s per Mtok = 0.139 h -> 1.39;
at a price of 5 per Mtok the margin is (5 - 1.39) / 5 = 72%.

Two bases: *allocation* counts every reserved GPU hour (idle included; this is what compares
with a price), *usage* counts only the busy share of those hours.
"""

from __future__ import annotations

from dataclasses import dataclass

SECONDS_PER_HOUR = 3600.0
TOKENS_PER_MILLION = 1_000_000.0


def cost_per_million_tokens(*, gpu_hour_price: float, gpus: int, tokens_per_second: float) -> float:
    """Allocation-basis cost of one million tokens at a sustained throughput."""
    if tokens_per_second <= 0:
        raise ValueError("tokens_per_second must be positive")
    if gpus < 1:
        raise ValueError("gpus must be at least 1")
    if gpu_hour_price < 0:
        raise ValueError("gpu_hour_price must not be negative")
    seconds = TOKENS_PER_MILLION / tokens_per_second
    return gpu_hour_price * gpus * seconds / SECONDS_PER_HOUR


def margin(*, price_per_mtok: float, cost_per_mtok: float) -> float:
    """Share of the price left after cost: (price - cost) / price. Negative when losing money."""
    if price_per_mtok <= 0:
        raise ValueError("price_per_mtok must be positive")
    return (price_per_mtok - cost_per_mtok) / price_per_mtok


def gpu_hours_per_day(*, gpus: int) -> float:
    return gpus * 24.0


@dataclass(frozen=True)
class Economics:
    cost_per_mtok: float  # allocation basis
    cost_per_mtok_usage: float | None  # busy hours only; None without a utilization figure
    margin: float | None  # against the price charged, allocation basis
    price_per_mtok: float | None

    @property
    def margin_percent(self) -> float | None:
        return None if self.margin is None else self.margin * 100.0


def economics(
    *,
    gpu_hour_price: float,
    gpus: int,
    tokens_per_second: float,
    price_per_mtok: float | None = None,
    busy_fraction: float | None = None,
) -> Economics:
    alloc = cost_per_million_tokens(
        gpu_hour_price=gpu_hour_price, gpus=gpus, tokens_per_second=tokens_per_second
    )
    usage = None if busy_fraction is None else alloc * busy_fraction
    m = None
    if price_per_mtok:
        m = margin(price_per_mtok=price_per_mtok, cost_per_mtok=alloc)
    return Economics(
        cost_per_mtok=alloc, cost_per_mtok_usage=usage, margin=m, price_per_mtok=price_per_mtok
    )


# Which direction is better, per metric name used in run records.
HIGHER_IS_BETTER = {"qps", "output_tps", "input_tps", "total_tps"}


@dataclass(frozen=True)
class MetricDelta:
    metric: str
    before: float
    after: float

    @property
    def change(self) -> float:
        return self.after - self.before

    @property
    def relative(self) -> float | None:
        return None if self.before == 0 else (self.after - self.before) / self.before

    @property
    def improved(self) -> bool | None:
        """True when the change goes the good way; None for no change or neutral metrics."""
        if self.change == 0 or self.metric in {"gpu_util", "sm_active", "dram_active"}:
            return None
        return (self.change > 0) == (self.metric in HIGHER_IS_BETTER)


def run_deltas(
    before: dict[str, float | None], after: dict[str, float | None]
) -> list[MetricDelta]:
    """Per-metric before/after for the metrics both runs measured, in `before`'s order."""
    return [
        MetricDelta(name, b, after[name])
        for name, b in before.items()
        if b is not None and after.get(name) is not None
    ]
