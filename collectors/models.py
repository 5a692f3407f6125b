"""What machines send, as stored: hosts and their tokens, raw samples, and roll-ups.

Raw tables (`GpuSample`, `RequestSample`, `ScrapeWindow`) are append-only, sized for volume
(BigAutoField, composite `(host, ts)` / `(service, host, ts)` indexes) and pruned after
`PERFHUB_RAW_RETENTION_DAYS`. Pages read `ServiceRollup` / `GpuRollup` (1-minute and hourly
rows), never raw rows for long ranges (DESIGN.md sections 2 and 4).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils.timesince import timesince

from collectors.exposition import engines
from collectors.exposition.promql import parse_selector
from core.names import NAME_MAX_LENGTH
from core.outbound import OutboundRefused, check_url
from core.validators import validate_http_url
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
# How recent a push host's last_seen_at must be for it to count as receiving. An agent pushes
# every 10 s by default, but ingest stamps last_seen_at at most once a minute, so a healthy
# host's stamp is up to a minute old; three minutes also forgives a push or two lost to a
# retry (the agent spools and replays) before the host is called silent.
PUSH_FRESHNESS = timedelta(minutes=3)


def pull_kind_choices() -> list[tuple[str, str]]:
    """What a pull URL may answer with: the agent's batch, or any registered engine or exporter."""
    return [
        (Host.PULL_AGENT, "PerfHub agent (batch document)"),
        *((engine.name, f"{engine.label} /metrics") for engine in engines.ENGINES.values()),
        ("dcgm", "dcgm-exporter /metrics"),
    ]


def engine_choices() -> list[tuple[str, str]]:
    """The registered serving engines (a Prometheus source reads one engine's series)."""
    return [(engine.name, engine.label) for engine in engines.ENGINES.values()]


class Host(models.Model):
    """A GPU host: pushes through an agent, or is pulled from a URL on a schedule."""

    PULL_AGENT = "agent"  # the agent's own endpoint, answering with a batch document

    class Status(models.TextChoices):
        UP = "up", "up"
        DOWN = "down", "down"
        UNKNOWN = "unknown", "unknown"

    class Health(models.TextChoices):
        """What the hosts page says about a host (see `health`); never stored."""

        RECEIVING = "receiving", "receiving"
        SILENT = "silent", "silent"
        NEVER_SEEN = "never_seen", "never seen"
        UP = "up", "up"
        DOWN = "down", "down"
        NOT_PULLED = "not_pulled", "not pulled yet"

    name = models.CharField(max_length=200, unique=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(null=True, blank=True)

    pull_url = models.URLField(blank=True, help_text="Leave blank for hosts that push.")
    pull_kind = models.CharField(max_length=NAME_MAX_LENGTH, choices=pull_kind_choices, blank=True)
    pull_service = models.ForeignKey(
        Service,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="pulled_hosts",
        help_text="The service an engine scrape belongs to.",
    )
    pull_interval_s = models.PositiveIntegerField(default=15)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.UNKNOWN)
    last_error = models.TextField(blank=True)
    last_pull_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(pull_interval_s__gte=5), name="host_pull_interval_at_least_5s"
            ),
            models.CheckConstraint(
                condition=Q(pull_url="") | ~Q(pull_kind=""), name="host_pull_url_needs_kind"
            ),
        ]
        indexes = [
            models.Index(
                fields=["last_pull_at"], condition=~Q(pull_url=""), name="host_pull_targets"
            )
        ]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        if self.pull_url:
            try:
                check_url(self.pull_url, unresolved_ok=True)
            except OutboundRefused as exc:
                raise ValidationError({"pull_url": str(exc)}) from None
        if self.pull_url and not self.pull_kind:
            raise ValidationError({"pull_kind": "Say what the pull URL answers with."})
        if self.pull_kind in engines.engine_names() and not self.pull_service_id:
            raise ValidationError({"pull_service": "An engine scrape belongs to a service."})

    @property
    def is_pulled(self) -> bool:
        return bool(self.pull_url)

    def health(self, now: datetime) -> Host.Health:
        """Push hosts: receiving while last_seen_at is within PUSH_FRESHNESS, else silent
        (never seen when null). Pull hosts: the last pull's status, which only pulls set."""
        if self.is_pulled:
            return {
                self.Status.UP: self.Health.UP,
                self.Status.DOWN: self.Health.DOWN,
            }.get(self.status, self.Health.NOT_PULLED)
        if self.last_seen_at is None:
            return self.Health.NEVER_SEEN
        if now - self.last_seen_at <= PUSH_FRESHNESS:
            return self.Health.RECEIVING
        return self.Health.SILENT

    def health_detail(self, now: datetime) -> str:
        """A short sentence behind the health badge, e.g. "last push 40 seconds ago"."""
        health = self.health(now)
        if health == self.Health.DOWN:
            return self.last_error or "the last pull failed"
        if health == self.Health.NOT_PULLED:
            return "waiting for the first pull"
        if health == self.Health.NEVER_SEEN:
            return "no push received yet"
        if health == self.Health.UP:
            return f"pulled {_ago(self.last_pull_at, now)} ago" if self.last_pull_at else ""
        if health == self.Health.RECEIVING:
            return f"last push {_ago(self.last_seen_at, now)} ago"
        return f"nothing for {_ago(self.last_seen_at, now)}"


def _ago(then: datetime, now: datetime) -> str:
    # Stamps are written at most once a minute, so seconds would be false precision.
    if now - then < timedelta(minutes=1):
        return "under a minute"
    return timesince(then, now, depth=1)


class AgentToken(models.Model):
    """A host's credential. The plaintext is shown once; we keep a public prefix and a digest.

    Tokens issued before digests left SECRET_KEY hold an HMAC keyed with it (`LEGACY_HMAC`);
    the first successful use re-stores them as plain SHA-256 (see services.tokens).
    """

    class DigestKind(models.TextChoices):
        SHA256 = "sha256", "SHA-256 of the token"
        LEGACY_HMAC = "hmac", "HMAC-SHA256 keyed with SECRET_KEY (until first use)"

    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="tokens")
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    digest_kind = models.CharField(
        max_length=6, choices=DigestKind.choices, default=DigestKind.SHA256
    )
    label = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.host} token {self.prefix}…"

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None


class IngestBatch(models.Model):
    """One accepted batch: the idempotency key, and the roll-up work queue.

    `minutes` lists the epoch minutes (ts // 60) the batch touched, so the roll-up task
    recomputes exactly those minutes for the host.
    """

    id = models.BigAutoField(primary_key=True)
    batch_id = models.UUIDField()
    host = models.ForeignKey(Host, on_delete=models.CASCADE, related_name="batches")
    received_at = models.DateTimeField(auto_now_add=True, db_index=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    agent_version = models.CharField(max_length=40, blank=True)
    token = models.ForeignKey(
        AgentToken,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The credential that pushed it (none for a pull).",
    )
    counts = models.JSONField(default=dict)
    minutes = models.JSONField(default=list)
    claim = models.UUIDField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    rolled_up_at = models.DateTimeField(null=True, blank=True)
    # A batch the roll-up could not process is set aside with the reason, so it never blocks
    # the batches after it (it is shown on its host's page; `requeue` gives it another go).
    quarantined_at = models.DateTimeField(null=True, blank=True)
    quarantine_reason = models.TextField(blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["batch_id"], name="ingestbatch_unique_id")]
        indexes = [
            models.Index(
                fields=["id"],
                condition=Q(rolled_up_at__isnull=True, quarantined_at__isnull=True),
                name="ingestbatch_todo",
            ),
            models.Index(
                fields=["host", "quarantined_at"],
                condition=Q(quarantined_at__isnull=False),
                name="ingestbatch_quarantined",
            ),
        ]

    def __str__(self) -> str:
        return str(self.batch_id)

    @property
    def is_quarantined(self) -> bool:
        return self.quarantined_at is not None


# Raw rows' keys: checked once a batch by `collectors.storage.check_keys`, not by a per-row
# foreign-key trigger (`db_constraint=False`; see that module). Deleting a host or service still
# deletes its raw rows (the ORM's cascade, under the row lock of `collectors.signals`).
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


def _validate_selector(value: str) -> None:
    try:
        parse_selector(value)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None


class PrometheusSource(models.Model):
    """A service fed through a Prometheus server that already scrapes its engine (and DCGM).

    Beat reads the series the mapping tables name through `/api/v1/query_range` and ingests
    them as scrapes of `host` (created with the source), one per step; `cursor` is the last
    step ingested. In the aggregated mode it reads the recording rules' per-service sums
    instead (`collectors.exposition.recording`), one window per evaluation. The first sync
    reads `backfill_hours` back so the dashboards draw at once.
    """

    class Status(models.TextChoices):
        OK = "ok", "ok"
        ERROR = "error", "error"
        UNKNOWN = "unknown", "not queried yet"

    class Mode(models.TextChoices):
        PER_HOST = "per_host", "per host: every host's raw series"
        AGGREGATED = "aggregated", "aggregated: the service sums PerfHub's recording rules write"

    name = models.CharField(max_length=100, unique=True)
    service = models.ForeignKey(
        Service, on_delete=models.CASCADE, related_name="prometheus_sources"
    )
    mode = models.CharField(
        max_length=12,
        choices=Mode.choices,
        default=Mode.PER_HOST,
        help_text="Aggregated: the store evaluates `manage.py export_recording_rules` and "
        "PerfHub reads only the per-service sums (its cost no longer grows with the hosts); the "
        'engine selector then matches the service label, e.g. service="chat", and the step '
        "must equal the rules' interval.",
    )
    host = models.OneToOneField(
        Host,
        on_delete=models.PROTECT,
        related_name="prometheus_source",
        editable=False,
        help_text="The host its samples are stored under (made with the source).",
    )
    base_url = models.CharField(
        "Prometheus URL",
        max_length=500,
        validators=[validate_http_url],
        help_text="e.g. http://prometheus:9090",
    )
    engine = models.CharField(
        max_length=NAME_MAX_LENGTH,
        choices=engine_choices,
        default="vllm",
        help_text="Which mapping table reads its series (the engine registry).",
    )
    engine_selector = models.CharField(
        max_length=500,
        validators=[_validate_selector],
        help_text='Label matchers for the engine\'s series, e.g. job="vllm", model_name="chat".',
    )
    dcgm_selector = models.CharField(
        "DCGM selector",
        max_length=500,
        blank=True,
        validators=[_validate_selector],
        help_text='Matchers for dcgm-exporter\'s series of the same GPUs, e.g. job="dcgm", '
        'Hostname="gpu-07". Blank: no GPU data.',
    )
    step_s = models.PositiveIntegerField(
        "step (s)", default=15, help_text="Resolution read back: match the scrape interval."
    )
    interval_s = models.PositiveIntegerField("query every (s)", default=60)
    backfill_hours = models.PositiveIntegerField(
        default=6, help_text="On first connection, read this far back."
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    status = models.CharField(
        max_length=10, choices=Status.choices, default=Status.UNKNOWN, editable=False
    )
    last_error = models.TextField(blank=True, editable=False)
    last_attempt_at = models.DateTimeField(null=True, blank=True, editable=False)
    last_success_at = models.DateTimeField(null=True, blank=True, editable=False)
    cursor = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="The last step ingested."
    )
    series_counts = models.JSONField(
        default=dict, editable=False, help_text="Series found per source at the last sync."
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(step_s__gte=1), name="promsource_step_positive"),
            models.CheckConstraint(
                condition=Q(backfill_hours__lte=24 * 7), name="promsource_backfill_within_week"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("collectors:prometheus_source", args=[self.pk])

    def clean(self) -> None:
        if self.base_url:
            try:  # again at every call: a name may resolve elsewhere later
                check_url(self.base_url, unresolved_ok=True)
            except OutboundRefused as exc:
                raise ValidationError({"base_url": str(exc)}) from None
        if self.mode == self.Mode.AGGREGATED and self.dcgm_selector:
            raise ValidationError(
                {"dcgm_selector": "Leave blank in the aggregated mode: it reads no GPU series."}
            )
        if self.backfill_hours is not None and self.backfill_hours > 24 * 7:
            # Ingest accepts samples up to 7 days old (DESIGN.md section 3).
            raise ValidationError({"backfill_hours": "At most 168 hours (7 days)."})


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
