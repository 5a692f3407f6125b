"""What machines send, as stored row by row: GPU samples, requests, scrape windows, and the
latest scrape kept to compute the next window.

Append-only, sized for volume (BigAutoField, composite `(host, ts)` / `(service, host, ts)`
indexes) and pruned after `PERFHUB_RAW_RETENTION_DAYS`."""

from __future__ import annotations

from django.db import models

from collectors.models.hosts import Host
from core.names import NAME_MAX_LENGTH
from dossiers.models import Service

# Raw rows' keys: checked once a batch (`collectors.storage.check_keys_of`, `lock_rows`), not
# by a per-row foreign-key trigger (`db_constraint=False`; see that module). Deleting a host
# or service still deletes its raw rows (the ORM's cascade, under the row lock of
# `collectors.signals`).
RAW_KEY = {"on_delete": models.CASCADE, "related_name": "+", "db_constraint": False}


class GpuSample(models.Model):
    id = models.BigAutoField(primary_key=True)
    host = models.ForeignKey(Host, **RAW_KEY)
    ts = models.DateTimeField()
    gpu_index = models.PositiveSmallIntegerField()
    uuid = models.CharField(max_length=100, blank=True)
    name = models.CharField(max_length=100, blank=True)
    util = models.FloatField(null=True)
    mem_util = models.FloatField(null=True)
    mem_used_bytes = models.BigIntegerField(null=True)
    mem_total_bytes = models.BigIntegerField(null=True)
    power_w = models.FloatField(null=True)
    temp_c = models.FloatField(null=True)
    sm_clock_mhz = models.FloatField(null=True)
    sm_active = models.FloatField(null=True)
    sm_occupancy = models.FloatField(null=True)
    dram_active = models.FloatField(null=True)

    class Meta:
        indexes = [models.Index(fields=["host", "ts"], name="gpusample_host_ts")]

    def __str__(self) -> str:
        return f"GPU {self.gpu_index} of host {self.host_id} at {self.ts:%Y-%m-%d %H:%M:%S}"


class RequestSample(models.Model):
    """One request as the agent saw it (times in ms).

    Two indexes besides the key, each with its reader (every index costs every insert):
    `(host, ts)` for the roll-up's `host_id = %s AND ts >= %s AND ts < %s` (and deleting a
    host's rows), `(service, host, ts)` for a service's raw rows over a range
    (`service_id = %s AND ts >= ...`, deleting a service's rows). The foreign keys carry no
    index of their own: the composites lead with their columns.
    """

    id = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, db_index=False, **RAW_KEY)
    host = models.ForeignKey(Host, db_index=False, **RAW_KEY)
    ts = models.DateTimeField()
    ttft_ms = models.FloatField(null=True)
    tpot_ms = models.FloatField(null=True)
    e2e_ms = models.FloatField(null=True)
    queue_ms = models.FloatField(null=True)
    prompt_tokens = models.IntegerField(null=True)
    output_tokens = models.IntegerField(null=True)
    ok = models.BooleanField(default=True)

    class Meta:
        indexes = [
            models.Index(fields=["host", "ts"], name="requestsample_host_ts"),
            models.Index(fields=["service", "host", "ts"], name="requestsample_svc_host_ts"),
        ]

    def __str__(self) -> str:
        return f"request at {self.ts:%Y-%m-%d %H:%M:%S} ({self.e2e_ms} ms)"


class ScrapeWindow(models.Model):
    """The change between two consecutive scrapes of one host + service + source.

    `counters` are increases, `rates` per second, `histograms` bucket deltas
    ({name: BucketCounts.to_dict()}, seconds), `gauges` the values at the window's end.
    """

    id = models.BigAutoField(primary_key=True)
    host = models.ForeignKey(Host, **RAW_KEY)
    service = models.ForeignKey(Service, **RAW_KEY)
    source = models.CharField(max_length=NAME_MAX_LENGTH)  # an engine or exporter name
    start_ts = models.DateTimeField()
    ts = models.DateTimeField(help_text="End of the window (the later scrape).")
    seconds = models.FloatField()
    counters = models.JSONField(default=dict)
    rates = models.JSONField(default=dict)
    histograms = models.JSONField(default=dict)
    gauges = models.JSONField(default=dict)
    reset_detected = models.BooleanField(default=False)

    class Meta:
        indexes = [
            models.Index(fields=["host", "ts"], name="scrapewindow_host_ts"),
            models.Index(fields=["service", "host", "ts"], name="scrapewindow_svc_host_ts"),
            # Restarts are rare: diagnosis finds a service's latest one without a scan.
            models.Index(
                fields=["service", "ts"],
                condition=models.Q(reset_detected=True),
                name="scrapewindow_resets",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.source} window ending {self.ts:%Y-%m-%d %H:%M:%S}"


class ScrapeState(models.Model):
    """The latest scrape per host + service + source, kept to compute the next window.

    The exposition text itself is kept (and parsed again next time), so the state does not
    depend on the parser's in-memory types and survives parser upgrades.
    """

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    source = models.CharField(max_length=NAME_MAX_LENGTH)  # an engine or exporter name
    ts = models.DateTimeField()
    exposition = models.TextField()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["host", "service", "source"], name="scrapestate_unique_series"
            )
        ]

    def __str__(self) -> str:
        return f"{self.source} state at {self.ts:%Y-%m-%d %H:%M:%S}"
