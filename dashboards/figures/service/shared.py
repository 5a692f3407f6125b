"""What every chart of a service's dashboard shares: the time range, and the text of a chart
with no samples."""

from __future__ import annotations

from datetime import datetime

from dashboards.selectors import ServiceDashboard


def _no_samples(d: ServiceDashboard) -> str:
    hosts = f" on {', '.join(d.hosts)}" if d.hosts else ""
    return (
        f"No samples from any agent{hosts} in this range — "
        f"is an agent pushing for {d.service.slug}?"
    )


def _x_range(d: ServiceDashboard) -> tuple[datetime, datetime]:
    return (d.start, d.end)
