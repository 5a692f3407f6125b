"""A service fed through a Prometheus server that already scrapes its engine (and DCGM)."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.urls import reverse

from collectors.exposition import engines
from collectors.exposition.promql import parse_selector
from collectors.models.hosts import Host
from core.names import NAME_MAX_LENGTH
from core.outbound import OutboundRefused, check_url
from core.validators import validate_http_url
from dossiers.models import Service


def engine_choices() -> list[tuple[str, str]]:
    """The registered serving engines (a Prometheus source reads one engine's series)."""
    return [(engine.name, engine.label) for engine in engines.ENGINES.values()]


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
            # Ingest accepts samples up to 7 days old (docs/contracts.md).
            raise ValidationError({"backfill_hours": "At most 168 hours (7 days)."})
