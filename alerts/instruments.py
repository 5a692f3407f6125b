"""The alerts app's instruments (see `collectors.instruments` for how they are collected)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

import collectors.instruments  # noqa: F401  (sets up multiprocess values first)

EVALUATION_SECONDS = Histogram(
    "perfhub_alert_evaluation_duration_seconds",
    "Time of one alert evaluation round (every due rule).",
    buckets=(0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
)
NOTIFICATIONS = Counter(
    "perfhub_notifications",
    "Notification attempts by receiver kind and outcome (sent, failed).",
    ["kind", "outcome"],
)
