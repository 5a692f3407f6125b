"""Per-host roll-ups: one host's traffic for a service, and one GPU, over a minute, five
minutes or an hour. Pages read these (and the merged ones), never raw rows for long ranges."""

from __future__ import annotations

from django.db import models

from collectors.models.hosts import Host
from dossiers.models import Service

# Each a statistic of its own: tpot per request, itl per token gap; queue, prefill and decode
# are the engine-side layers. New metrics go at the end (stored quantile arrays are in this
# order, and rows written before a metric existed simply lack it).
LATENCY_METRICS = ("e2e", "ttft", "tpot", "queue", "itl", "prefill", "decode")
MINUTE = 60
FIVE_MINUTES = 300
HOUR = 3600
RESOLUTIONS = (MINUTE, FIVE_MINUTES, HOUR)
RESOLUTION_CHOICES = [(MINUTE, "1 min"), (FIVE_MINUTES, "5 min"), (HOUR, "1 h")]


def _latency_fields() -> dict[str, models.Field]:
    fields: dict[str, models.Field] = {}
    for metric in LATENCY_METRICS:
        fields[f"{metric}_count"] = models.PositiveIntegerField(default=0)
        fields[f"{metric}_sum"] = models.FloatField(null=True)
        fields[f"{metric}_min"] = models.FloatField(null=True)
        fields[f"{metric}_max"] = models.FloatField(null=True)
        fields[f"{metric}_sketch"] = models.BinaryField(
            null=True, help_text="Compressed DDSketch of request-level values (ms)."
        )
        fields[f"{metric}_buckets"] = models.JSONField(
            null=True, help_text="Scraped histogram bucket deltas (BucketCounts, seconds)."
        )
    return fields


class ServiceRollup(models.Model):
    """One host's traffic for one service over one minute (60), five minutes (300) or hour.

    Rates are recomputed from the additive columns so rows merge exactly:
    qps = scraped_requests / scraped_seconds when scraped, else requests / request_seconds.
    """

    id = models.BigAutoField(primary_key=True)
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    resolution_s = models.PositiveIntegerField(choices=RESOLUTION_CHOICES)
    start = models.DateTimeField()
    # Request-level data pushed by agents.
    requests = models.PositiveIntegerField(default=0)
    errors = models.PositiveIntegerField(default=0)
    prompt_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    request_seconds = models.FloatField(default=0)
    # Per latency SLO of the service (analysis.slo.objective_key), [judged, good] pushed
    # requests: the joint count of every threshold, exact, counted from the raw requests.
    slo_good = models.JSONField(default=dict, blank=True)
    # Counter increases from scrape windows ending in this period.
    scraped_requests = models.FloatField(default=0)
    scraped_prompt_tokens = models.FloatField(default=0)
    scraped_generation_tokens = models.FloatField(default=0)
    scraped_seconds = models.FloatField(default=0)
    # The part of scraped_seconds in scrape windows where the engine finished any request:
    # the seconds with traffic, what a live rate compared with a load test is taken over.
    scraped_busy_seconds = models.FloatField(default=0)
    # Requests the engine finished with an error, or aborted (the client went away), from its
    # counters (vLLM's finished_reason, TGI's failures, SGLang's aborts): not in scraped_requests.
    scraped_errors = models.FloatField(default=0)
    scraped_aborts = models.FloatField(default=0)
    # From the engine's per-request token histograms (vLLM), where it has them: the requests
    # observed finishing and their prompt and output tokens. Tokens per request are read from
    # these, not from the token counters, which also count the tokens of requests whose client
    # disconnected (counted by no request counter).
    scraped_token_requests = models.FloatField(default=0)
    scraped_request_prompt_tokens = models.FloatField(default=0)
    scraped_request_output_tokens = models.FloatField(default=0)
    # The observations scraped_request_prompt_tokens was summed over: TGI's prompt histogram
    # observes every validated sequence (failed, dropped, each best_of one), its output one the
    # successes only; where one histogram observes both (vLLM, Triton), scraped_token_requests.
    scraped_prompt_token_requests = models.FloatField(default=0)
    # Running requests the engine evicted for want of KV-cache room (vLLM's preemptions, SGLang's
    # retractions), and the requests finished (errors and aborts included) in the scrape windows
    # whose engine counted them. NULL is "not counted" (TGI, Triton, an SGLang without a
    # retraction total, dcgm-exporter or pushed rows only), never read as 0 preemptions.
    scraped_preemptions = models.FloatField(null=True, default=None)
    scraped_finished_counting_preemptions = models.FloatField(null=True, default=None)
    # Derived rates (per second), kept for cheap reads.
    qps = models.FloatField(null=True)
    prompt_tps = models.FloatField(null=True)
    generation_tps = models.FloatField(null=True)
    # Gauge means over the scrapes in the period.
    gauge_samples = models.PositiveIntegerField(default=0)
    running_mean = models.FloatField(null=True)
    waiting_mean = models.FloatField(null=True)
    kv_cache_mean = models.FloatField(null=True)

    locals().update(_latency_fields())

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["service", "host", "resolution_s", "start"],
                name="servicerollup_unique_period",
            )
        ]
        indexes = [
            models.Index(fields=["service", "resolution_s", "start"], name="servicerollup_svc_res"),
            models.Index(fields=["host", "resolution_s", "start"], name="servicerollup_host_res"),
        ]

    def __str__(self) -> str:
        return f"service {self.service_id} host {self.host_id} {self.start:%H:%M}"


class GpuRollup(models.Model):
    """One GPU over one minute, five minutes or an hour: means (util, SM, DRAM, power) and
    memory high-water."""

    id = models.BigAutoField(primary_key=True)
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="+")
    gpu_index = models.PositiveSmallIntegerField()
    resolution_s = models.PositiveIntegerField(choices=RESOLUTION_CHOICES)
    start = models.DateTimeField()
    samples = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=100, blank=True)
    util_mean = models.FloatField(null=True)
    mem_util_mean = models.FloatField(null=True)
    sm_active_mean = models.FloatField(null=True)
    sm_occupancy_mean = models.FloatField(null=True)
    dram_active_mean = models.FloatField(null=True)
    power_mean = models.FloatField(null=True)
    mem_used_max = models.BigIntegerField(null=True)
    mem_total_bytes = models.BigIntegerField(null=True)
    temp_max = models.FloatField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["host", "gpu_index", "resolution_s", "start"],
                name="gpurollup_unique_period",
            )
        ]
        indexes = [
            models.Index(fields=["host", "resolution_s", "start"], name="gpurollup_host_res")
        ]

    def __str__(self) -> str:
        return f"GPU {self.gpu_index} host {self.host_id} {self.resolution_s}s {self.start:%H:%M}"
