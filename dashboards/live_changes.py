"""Where a service's live latency stepped, day by day: change points over the live roll-ups.

The load-test history (`loadtests.history`) shows steps between runs; this shows steps in
production traffic, the answer to "what changed this week?". Each UTC day's hourly merged
rows are merged (sketches merged, bucket deltas added: percentiles are never averaged) and the
day's percentiles taken from the merge; a day with fewer requests than the quantile's minimum
count is left out. Each tracked series goes through `analysis.changepoints.change_points`, at
least three days on each side of a step.

Why days and not hours: latency follows the day's load curve, and a change point over hourly
points would report every evening peak. A whole day covers the curve, so a step between days
is a change in the service (a deploy, a config, a new traffic mix), not the time of day.
One query: the hourly merged rows of the lookback.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from urllib.parse import urlencode

from django.urls import reverse
from django.utils import timezone

from analysis import buckets, changepoints, sketches
from analysis.percentiles import minimum_count
from collectors.distributions import distribution_percentiles, merge_bucket_counts
from collectors.models import HOUR, ServiceMergedRollup
from dossiers.models import Service

LOOKBACK_DAYS = 28
TRACKED = (  # (latency family, quantile, label)
    ("e2e", 0.5, "E2E P50"),
    ("e2e", 0.99, "E2E P99"),
    ("ttft", 0.5, "TTFT P50"),
    ("ttft", 0.99, "TTFT P99"),
    ("tpot", 0.5, "TPOT P50"),
)


@dataclass(frozen=True)
class LiveChange:
    label: str  # "E2E P99"
    day: date  # the first day at the new level (UTC)
    before: float  # ms, the median of the daily values before
    after: float  # ms, from `day` on, to the next step
    days_before: int
    days_after: int
    service_slug: str

    @property
    def at(self) -> datetime:
        return datetime.combine(self.day, time.min, tzinfo=UTC)

    @property
    def relative(self) -> float:
        return self.after / self.before - 1

    @property
    def title(self) -> str:
        return f"Live {self.label} stepped {self.relative:+.0%} on {self.day:%Y-%m-%d} (UTC)"

    @property
    def detail(self) -> str:
        return (
            f"{self.before:,.1f} -> {self.after:,.1f} ms, daily percentile of all requests "
            f"(merged over hosts); {self.days_before} days before, {self.days_after} after"
        )

    @property
    def url(self) -> str:
        """The service dashboard over the days around the step."""
        start = self.at - timedelta(days=min(self.days_before, 7))
        end = self.at + timedelta(days=min(self.days_after, 7))
        query = {"range": "custom", "start": f"{start:%Y-%m-%dT%H:%M}Z",
                 "end": f"{end:%Y-%m-%dT%H:%M}Z"}  # fmt: skip
        return reverse("dashboards:service", args=[self.service_slug]) + "?" + urlencode(query)


def live_changes(
    *, service: Service, now: datetime | None = None, days: int = LOOKBACK_DAYS
) -> list[LiveChange]:
    """Steps in the tracked daily live percentiles over the last `days` whole days, oldest
    first. Today (not yet whole) is left out."""
    today = (now or timezone.now()).astimezone(UTC).date()
    first = today - timedelta(days=days)
    families = sorted({family for family, _, _ in TRACKED})
    fields = ["start"] + [f"{f}_{part}" for f in families for part in ("sketch", "buckets")]
    by_day: dict[date, dict[str, tuple[list, list]]] = defaultdict(
        lambda: {f: ([], []) for f in families}
    )
    rows = ServiceMergedRollup.objects.filter(
        service=service,
        resolution_s=HOUR,
        start__gte=datetime.combine(first, time.min, tzinfo=UTC),
        start__lt=datetime.combine(today, time.min, tzinfo=UTC),
    ).values_list(*fields)
    for start, *blobs in rows.iterator(chunk_size=500):
        day = by_day[start.astimezone(UTC).date()]
        for i, family in enumerate(families):
            sketch, bucket_counts = blobs[2 * i], blobs[2 * i + 1]
            if sketch is not None:
                day[family][0].append(sketch)
            if bucket_counts:
                day[family][1].append(buckets.BucketCounts.from_dict(bucket_counts))
    daily = {
        d: {
            f: distribution_percentiles(
                sketches.merge_serialized(s) if s else None,
                merge_bucket_counts(b),
                sorted({q for family, q, _ in TRACKED if family == f}),
            )
            for f, (s, b) in merged.items()
        }
        for d, merged in sorted(by_day.items())
    }
    changes = []
    for family, q, label in TRACKED:
        points = []
        for d, percentiles in daily.items():
            p = next(p for p in percentiles[family] if p.q == q)
            if p.value is not None and p.value > 0 and p.count >= minimum_count(q):
                points.append((d, p.value))
        for step in changepoints.change_points([value for _, value in points]):
            changes.append(
                LiveChange(
                    label=label,
                    day=points[step.index][0],
                    before=step.before,
                    after=step.after,
                    days_before=step.runs_before,
                    days_after=step.runs_after,
                    service_slug=service.slug,
                )
            )
    return sorted(changes, key=lambda c: (c.day, c.label))
