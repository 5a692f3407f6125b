"""Roll-ups (the writing side): raw rows -> per-minute rows -> 5-minute and hourly rows, and the
service-merged rows, recomputed, never incremented.

- `queue`: claim batches nobody has rolled up yet, roll them up host by host, quarantine a
  batch that cannot be processed (`IngestBatch.quarantined_at`) so it never stalls the others.
- `host`: recompute a host's minutes from the raw rows (idempotent: a retried task or a late
  sample simply rewrites its minute).
- `store`: the one writer of per-host rows (`store_rollups`: the roll-up job's minutes, the
  demo history's minutes and hours): it replaces a host's periods, merges minutes into their
  5-minute and hourly rows, and rewrites the service-merged rows from every host's rows.
- `rows`: the rows themselves, built from what they summarise (no queries).
- `rebuild`: the derived rows again from minute and hour rows, over a whole range (after an
  upgrade added them; test and bench fixtures that insert rows in bulk).

Latency distributions: request-level values go into DDSketch (ms); scraped histogram bucket
deltas are added per minute (seconds, `BucketCounts`). Both merge exactly, so hourly rows,
hosts and ranges merge without ever averaging a percentile (docs/method.md). Reading
them back (`Traffic`, percentiles, the stored quantiles) is `collectors.distributions`.
"""

from collectors.services.rollups.host import rollup_host_minutes
from collectors.services.rollups.queue import (
    RollupReport,
    requeue_quarantined,
    rollup_claimed,
    rollup_pending,
    rollup_pending_report,
)
from collectors.services.rollups.rebuild import rebuild_derived_rollups
from collectors.services.rollups.rows import UnprocessableRows, check_finite
from collectors.services.rollups.store import merge_services, store_rollups

__all__ = [
    "RollupReport",
    "UnprocessableRows",
    "check_finite",
    "merge_services",
    "rebuild_derived_rollups",
    "requeue_quarantined",
    "rollup_claimed",
    "rollup_host_minutes",
    "rollup_pending",
    "rollup_pending_report",
    "store_rollups",
]
