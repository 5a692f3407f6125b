"""What a measured run records (the abstract `MeasuredRun`), and baselines, the stored ones."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from analysis import cost, plausibility
from analysis.percentiles import LATENCY_FIELDS, LATENCY_METRICS, PERCENTILE_LABELS
from analysis.runs import ENVIRONMENT_FIELDS, RESOURCE_FIELDS, THROUGHPUT_FIELDS, WORKLOAD_FIELDS
from dossiers.models.revisions import ConfigVersion
from dossiers.models.service import Service

PERCENTILES = PERCENTILE_LABELS
LATENCY_FIELD_NAMES = LATENCY_FIELDS
# A measured run's columns other than the latency percentiles, in reading order.
RUN_FIELD_NAMES = (
    "measured_at",
    *WORKLOAD_FIELDS,
    *ENVIRONMENT_FIELDS,
    *THROUGHPUT_FIELDS,
    *RESOURCE_FIELDS,
)


def _latency_fields() -> dict[str, models.FloatField]:
    return {
        f"{metric}_{p}_ms": models.FloatField(
            f"{metric.upper()} {p.upper()} (ms)",
            null=True,
            blank=True,
            validators=[MinValueValidator(0)],
        )
        for metric in LATENCY_METRICS
        for p in PERCENTILES
    }


class GpuSource(models.TextChoices):
    """Where a run's GPU figures (GPU-Util first) were measured. Blank: not recorded (typed in,
    imported from a dossier file, or stored before PerfHub kept it)."""

    NVML = "nvml", "NVML on the PerfHub agent"
    DCGM = "dcgm", "dcgm-exporter"
    NVML_DCGM = "nvml+dcgm", "NVML on the PerfHub agent and dcgm-exporter (hosts differ)"
    LOAD_TEST = "loadtest", "the load-test file's GPU telemetry"


class MeasuredRun(models.Model):
    """What a measured run records: workload, environment, results (docs/method.md).

    Abstract so load-test records and baselines share one definition of "a measurement".
    Latency percentile columns are `<metric>_<pXX>_ms`, e.g. `ttft_p99_ms`; missing is null.
    """

    measured_at = models.DateTimeField()
    # Workload
    concurrency = models.PositiveIntegerField(null=True, blank=True)
    request_rate = models.FloatField(
        "request rate (req/s)", null=True, blank=True, validators=[MinValueValidator(0)]
    )
    prompt_tokens_mean = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    prompt_tokens_std = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    output_tokens_mean = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    output_tokens_std = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    duration_s = models.FloatField(null=True, blank=True, validators=[MinValueValidator(0)])
    # Environment
    code_version = models.CharField(max_length=80, blank=True)
    engine_version = models.CharField(max_length=40, blank=True)
    # Throughput
    request_count = models.PositiveIntegerField(null=True, blank=True)
    qps = models.FloatField("QPS", null=True, blank=True, validators=[MinValueValidator(0)])
    input_tps = models.FloatField(
        "input tokens/s", null=True, blank=True, validators=[MinValueValidator(0)]
    )
    output_tps = models.FloatField(
        "output tokens/s", null=True, blank=True, validators=[MinValueValidator(0)]
    )
    # Resources (ratios 0-1)
    gpu_util = models.FloatField("GPU utilization", null=True, blank=True)
    sm_active = models.FloatField("SM active", null=True, blank=True)
    dram_active = models.FloatField("DRAM bandwidth utilization", null=True, blank=True)
    mem_weights_bytes = models.BigIntegerField("GPU memory for weights", null=True, blank=True)
    mem_kv_bytes = models.BigIntegerField("GPU memory for KV cache", null=True, blank=True)
    gpu_source = models.CharField(
        "where the GPU figures were measured",
        max_length=10,
        choices=GpuSource.choices,
        blank=True,
        help_text="Leave blank when unknown.",
    )

    locals().update(_latency_fields())
    # Where the latency columns were measured (analysis.percentiles.VANTAGES): a load-test
    # file is the client's; a baseline recorded from live engine histograms is the server's.
    vantage = models.CharField(
        max_length=6,
        choices=[("client", "client (load generator / gateway)"), ("server", "server (engine)")],
        default="client",
    )
    # The other side of the same run, when known: the engine's histograms over the run's
    # window ({"start", "end", "source", "figures": {"ttft_p99_ms": {...}}}), written by
    # `dashboards.vantage`, shown beside the client's figures with their gap.
    server_side = models.JSONField(default=dict, blank=True)

    class Meta:
        abstract = True

    def clean(self) -> None:
        # Every entry point (forms, admin, imports) gets the same verdict on impossible numbers:
        # analysis.plausibility's ranges, and no latency percentile below a lower one.
        errors = {}
        for name in ("gpu_util", "sm_active", "dram_active"):
            value = getattr(self, name)
            if value is not None and not 0 <= value <= 1:
                errors[name] = "A ratio between 0 and 1."
        if errors:
            raise ValidationError(errors)
        fields = {name: getattr(self, name) for name in plausibility.RUN_FIELD_RANGES}
        problems = plausibility.run_problems(fields)
        if problems:
            raise ValidationError({name: why for name, why in problems})

    def latency(self, metric: str, percentile: str) -> float | None:
        """The percentile in ms, or None when not recorded: also for a metric a baseline never
        records (ITL, a live engine-side figure, has no column here)."""
        return getattr(self, f"{metric}_{percentile}_ms", None)

    # What a run's throughput and utilization are over. Both subclasses have `service`; a
    # run's figures are one replica's by definition (docs/method.md, "One number, one
    # definition"): its cost is taken on one replica's GPUs, and a baseline recorded from live
    # traffic divides the service's totals by its replicas.
    @property
    def throughput_basis(self) -> str:
        """ "per replica (1 x A100, of the service's 2 replicas)", from the service's hardware."""
        service = self.service
        gpus = f"{service.gpus_per_replica} \N{MULTIPLICATION SIGN} {service.gpu_model}"
        replicas = f"{service.replicas} replica{'s' if service.replicas != 1 else ''}"
        return f"per replica ({gpus}, of the service's {replicas})"

    @property
    def gpu_basis(self) -> str:
        """What GPU-Util, SM and DRAM active are over and where GPU-Util was measured."""
        service = self.service
        # A ratio per GPU: the mean over the GPUs measured (a live window's are all the
        # service's, a load test's those with memory in use), the same basis either way.
        n = service.gpus_per_replica
        over = (
            f"per GPU, mean over the GPUs measured (a replica has {n} GPU{'s' if n != 1 else ''})"
        )
        where = (
            f"measured by {self.get_gpu_source_display()}"
            if self.gpu_source
            else "where it was measured is not recorded"
        )
        return f"{over}; {where}"

    def tokens_per_second(self, basis: str) -> float | None:
        if self.output_tps is None:
            return None
        if basis == Service.TokenBasis.TOTAL:
            return None if self.input_tps is None else self.input_tps + self.output_tps
        return self.output_tps

    def economics(self, service: Service, basis: str | None = None) -> cost.Economics | None:
        """Cost per Mtok and margin on the allocation basis, for one replica's GPUs."""
        return service.economics(
            tokens_per_second=self.tokens_per_second(basis or service.token_basis),
            gpus=service.gpus_per_replica,
            busy_fraction=self.gpu_util,
        )


class Baseline(MeasuredRun):
    """A reference measurement of the service. One per service is current; old ones are history."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="baselines")
    label = models.CharField(max_length=120)
    notes = models.TextField(blank=True)
    config_version = models.ForeignKey(
        ConfigVersion,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="baselines",
    )
    is_current = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The latest promotion to current, and who made it: a person, and the machine credential
    # they used when it came through the API (shown on the dossier timeline).
    promoted_at = models.DateTimeField(null=True, blank=True)
    promoted_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
    )
    promoted_via = models.CharField(
        max_length=200, blank=True, help_text="The API credential, e.g. a CI token's prefix."
    )

    class Meta:
        ordering = ["-measured_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["service"],
                condition=Q(is_current=True),
                name="baseline_one_current_per_service",
            ),
            models.CheckConstraint(
                condition=Q(concurrency__isnull=True) | Q(concurrency__gte=1),
                name="baseline_concurrency_positive",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.service}: {self.label}"

    def get_absolute_url(self) -> str:
        return reverse("dossiers:baseline", args=[self.service.slug, self.pk])

    def clean(self) -> None:
        super().clean()
        if self.config_version_id and self.config_version.service_id != self.service_id:
            raise ValidationError({"config_version": "That config belongs to another service."})
