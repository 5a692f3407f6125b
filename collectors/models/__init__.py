"""What machines send, as stored: hosts and their tokens, raw samples, and roll-ups.

Raw tables (`GpuSample`, `RequestSample`, `ScrapeWindow`) are append-only, sized for volume
(BigAutoField, composite `(host, ts)` / `(service, host, ts)` indexes) and pruned after
`PERFHUB_RAW_RETENTION_DAYS`. Pages read `ServiceRollup` / `GpuRollup` (1-minute and hourly
rows), never raw rows for long ranges (docs/architecture.md, "Data flow").

One module an area; everything is re-exported here, so `from collectors.models import X` and
the migrations' `collectors.models.<callable>` paths keep working. The imports run in the
order the models were declared in the single module this was, so Django registers them in
that order.
"""

# Declaration order (see above), not sorted:
# isort: off
from collectors.models.hosts import (
    PUSH_FRESHNESS,
    AgentToken,
    Host,
    IngestBatch,
    pull_kind_choices,
)
from collectors.models.raw import RAW_KEY, GpuSample, RequestSample, ScrapeState, ScrapeWindow
from collectors.models.rollups import (
    FIVE_MINUTES,
    HOUR,
    LATENCY_METRICS,
    MINUTE,
    RESOLUTION_CHOICES,
    RESOLUTIONS,
    GpuRollup,
    ServiceRollup,
)
from collectors.models.prometheus import PrometheusSource, _validate_selector, engine_choices
from collectors.models.merged_rollups import GPU_SERIES, ServiceMergedRollup
# isort: on

__all__ = [
    "FIVE_MINUTES",
    "GPU_SERIES",
    "HOUR",
    "LATENCY_METRICS",
    "MINUTE",
    "PUSH_FRESHNESS",
    "RAW_KEY",
    "RESOLUTIONS",
    "RESOLUTION_CHOICES",
    "AgentToken",
    "GpuRollup",
    "GpuSample",
    "Host",
    "IngestBatch",
    "PrometheusSource",
    "RequestSample",
    "ScrapeState",
    "ScrapeWindow",
    "ServiceMergedRollup",
    "ServiceRollup",
    "_validate_selector",
    "engine_choices",
    "pull_kind_choices",
]
