"""A service's roll-ups merged across its hosts at roll-up time: one row a dashboard point."""

from __future__ import annotations

from django.db import models

from collectors.models.rollups import LATENCY_METRICS, RESOLUTION_CHOICES
from dossiers.models import Service

GPU_SERIES = ("util", "mem_util", "sm_active", "sm_occupancy", "dram_active", "power")


def _merged_fields() -> dict[str, models.Field]:
    fields: dict[str, models.Field] = {}
    for metric in LATENCY_METRICS:
        fields[f"{metric}_count"] = models.PositiveIntegerField(default=0)
        fields[f"{metric}_sketch"] = models.BinaryField(
            null=True, help_text="Every host's request-level DDSketch merged (ms)."
        )
        fields[f"{metric}_buckets"] = models.JSONField(
            null=True, help_text="Every host's scraped bucket deltas added (seconds)."
        )
    for name in GPU_SERIES:
        fields[f"gpu_{name}_mean"] = models.FloatField(null=True)
        fields[f"gpu_{name}_n"] = models.PositiveIntegerField(default=0)
    return fields


class ServiceMergedRollup(models.Model):
    """A service's traffic over one period merged across its hosts, written at roll-up time.

    What a dashboard point shows, precomputed, so a page reads one row per point whatever the
    number of hosts: rates and queue lengths summed over hosts, KV usage their mean, latency
    distributions merged (sketches merged, bucket deltas added; never averaged percentiles)
    with the standard quantiles taken from the merge kept in `quantiles`, and the GPUs of
    the hosts that served the service in the period (mean of each GPU's mean; memory summed).
    """

    id = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    resolution_s = models.PositiveIntegerField(choices=RESOLUTION_CHOICES)
    start = models.DateTimeField()
    hosts = models.JSONField(default=list, help_text="Ids of the hosts merged.")
    requests = models.PositiveIntegerField(default=0)
    qps = models.FloatField(null=True)
    prompt_tps = models.FloatField(null=True)
    generation_tps = models.FloatField(null=True)
    running = models.FloatField(null=True)
    waiting = models.FloatField(null=True)
    kv_cache_usage = models.FloatField(null=True)
    # Outcomes over the period, from engine counters where scraped, else pushed rows:
    # error rate = errored / finished (finished counts errors and aborts too).
    finished = models.FloatField(default=0)
    errored = models.FloatField(default=0)
    aborted = models.FloatField(default=0)
    # Running requests the engines evicted for want of KV-cache room (vLLM's preemptions,
    # SGLang's retractions), summed over the hosts whose engine counted them, and the requests
    # finished where they were counted: below `finished` when part of the period was not
    # counted (mixed engines). Both NULL when no host counted them: "not counted", not 0.
    preempted = models.FloatField(null=True, default=None)
    finished_counting_preemptions = models.FloatField(null=True, default=None)
    # What SLO counts read, summed over the hosts (`collectors.distributions.slo_counts`):
    # pushed requests that failed, the engine's successful and failed requests, and each SLO
    # key's exact joint count, kept only when every host row with pushed requests held it.
    pushed_errors = models.PositiveIntegerField(default=0)
    scraped_requests = models.FloatField(default=0)
    scraped_errors = models.FloatField(default=0)
    slo_good = models.JSONField(default=dict, blank=True)
    quantiles = models.BinaryField(
        null=True,
        help_text="The standard quantiles of each latency metric taken from the merge, packed "
        "as float64 (see collectors.services.rollups.pack_quantiles), in ms.",
    )
    gpus = models.PositiveIntegerField(default=0)
    gpu_mem_used = models.BigIntegerField(null=True, help_text="Sum of the GPUs' high-water.")
    gpu_mem_total = models.BigIntegerField(null=True)
    gpu_mem_n = models.PositiveIntegerField(default=0)

    locals().update(_merged_fields())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["service", "resolution_s", "start"], name="servicemerged_unique_period"
            )
        ]

    def __str__(self) -> str:
        return f"service {self.service_id} {self.resolution_s}s {self.start:%Y-%m-%d %H:%M}"
