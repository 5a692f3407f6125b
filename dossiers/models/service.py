"""The service: what it serves, on what hardware, at what price, and whom to call."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from analysis import cost, plausibility
from core.names import NAME_MAX_LENGTH
from dossiers.models.team import Team

if TYPE_CHECKING:
    from dossiers.models.slo import Slo


# The serving engines a service may run on come from the engine registry in
# `collectors.exposition.engines`; dossiers sits below collectors, so collectors tells it
# (`use_engine_labels`, called from collectors' AppConfig.ready) rather than dossiers asking.
_engine_labels: Callable[[], dict[str, str]] = dict


def use_engine_labels(source: Callable[[], dict[str, str]]) -> None:
    global _engine_labels
    _engine_labels = source


def engine_choices() -> list[tuple[str, str]]:
    return [*_engine_labels().items(), ("other", "Other")]


class ServiceQuerySet(models.QuerySet):
    def editable_by(self, user) -> ServiceQuerySet:
        if not user.is_authenticated:
            return self.none()
        if user.is_superuser:
            return self
        return self.filter(team__memberships__user=user).distinct()


class Service(models.Model):
    class Quantization(models.TextChoices):
        NONE = "none", "none (fp16/bf16)"
        FP8 = "fp8", "FP8"
        INT8 = "int8", "INT8"
        AWQ = "awq", "AWQ (4-bit)"
        GPTQ = "gptq", "GPTQ (4-bit)"
        OTHER = "other", "other"

    class TokenBasis(models.TextChoices):
        OUTPUT = "output", "output tokens"
        TOTAL = "total", "input + output tokens"

    slug = models.SlugField(unique=True, help_text="Agents and CI name the service by this.")
    name = models.CharField(max_length=120)
    team = models.ForeignKey(Team, on_delete=models.PROTECT, related_name="services")
    summary = models.CharField(max_length=300, blank=True, help_text="One line: what it serves.")

    model_name = models.CharField(max_length=120)
    model_params_b = models.DecimalField(
        "parameters (billions)",
        max_digits=8,
        decimal_places=2,
        validators=[MinValueValidator(Decimal("0"))],
    )
    quantization = models.CharField(
        max_length=10, choices=Quantization.choices, default=Quantization.NONE
    )
    engine = models.CharField(max_length=NAME_MAX_LENGTH, choices=engine_choices)
    engine_version = models.CharField(max_length=40, blank=True)

    gpu_model = models.CharField(max_length=80)
    gpus_per_replica = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])
    replicas = models.PositiveIntegerField(default=1, validators=[MinValueValidator(1)])

    slo_p99_e2e_ms = models.FloatField(
        "SLO P99 end-to-end (ms)", null=True, blank=True, validators=[MinValueValidator(0)]
    )
    slo_p99_ttft_ms = models.FloatField(
        "SLO P99 TTFT (ms)", null=True, blank=True, validators=[MinValueValidator(0)]
    )
    slo_p99_tpot_ms = models.FloatField(
        "SLO P99 TPOT (ms)", null=True, blank=True, validators=[MinValueValidator(0)]
    )

    gpu_hour_price = models.DecimalField(
        "GPU price per hour",
        max_digits=10,
        decimal_places=4,
        validators=[MinValueValidator(Decimal("0"))],
    )
    currency = models.CharField(max_length=3, default="USD")
    price_per_mtok = models.DecimalField(
        "price charged per million tokens",
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        validators=[MinValueValidator(Decimal("0"))],
    )
    token_basis = models.CharField(
        "tokens that count", max_length=10, choices=TokenBasis.choices, default=TokenBasis.OUTPUT
    )
    gate_overrides = models.JSONField(
        "release gate overrides",
        default=dict,
        blank=True,
        help_text='Per-metric rule changes, e.g. {"ttft_p99_ms": {"relative": 0.1}}.',
    )

    # Whom a newcomer calls: shown first on the onboarding page and in the Markdown export.
    owner = models.CharField(
        max_length=120, blank=True, help_text="The person who answers for it, e.g. Mei Chen."
    )
    on_call = models.CharField(
        "on-call", max_length=200, blank=True, help_text="Rotation or pager, e.g. assistant-oncall."
    )
    channel = models.CharField(
        max_length=120, blank=True, help_text="Where to ask, e.g. #support-chat-perf."
    )
    runbook_url = models.URLField("runbook", max_length=300, blank=True)

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = ServiceQuerySet.as_manager()

    PEOPLE_FIELDS = ("owner", "on_call", "channel", "runbook_url")

    # What an owner edits on the settings form and a Markdown dossier carries (slug and team
    # are chosen at creation).
    EDITABLE_FIELDS = (
        "name",
        "summary",
        *PEOPLE_FIELDS,
        "model_name",
        "model_params_b",
        "quantization",
        "engine",
        "engine_version",
        "gpu_model",
        "gpus_per_replica",
        "replicas",
        "slo_p99_e2e_ms",
        "slo_p99_ttft_ms",
        "slo_p99_tpot_ms",
        "gpu_hour_price",
        "currency",
        "price_per_mtok",
        "token_basis",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(gpu_hour_price__gte=0), name="service_gpu_price_not_negative"
            ),
            models.CheckConstraint(
                condition=Q(price_per_mtok__isnull=True) | Q(price_per_mtok__gte=0),
                name="service_price_not_negative",
            ),
            models.CheckConstraint(
                condition=Q(gpus_per_replica__gte=1) & Q(replicas__gte=1),
                name="service_at_least_one_gpu",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("dossiers:dossier", args=[self.slug])

    def clean(self) -> None:
        # SLOs, GPU counts and prices within analysis.plausibility's ranges, on every entry.
        fields = {name: getattr(self, name) for name in plausibility.SERVICE_FIELD_RANGES}
        problems = plausibility.field_problems(fields, plausibility.SERVICE_FIELD_RANGES)
        if problems:
            raise ValidationError({name: why for name, why in problems})

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_replica * self.replicas

    def economics(
        self,
        *,
        tokens_per_second: float | None,
        gpus: int,
        busy_fraction: float | None = None,
    ) -> cost.Economics | None:
        """The one way from this service's prices to cost per Mtok and margin (allocation basis:
        every reserved GPU-hour counts). `gpus` are the GPUs that produced `tokens_per_second`:
        one replica's for a measured run, the whole fleet's for live traffic."""
        if not tokens_per_second or tokens_per_second <= 0:
            return None
        return cost.economics(
            gpu_hour_price=float(self.gpu_hour_price),
            gpus=gpus,
            tokens_per_second=tokens_per_second,
            price_per_mtok=None if self.price_per_mtok is None else float(self.price_per_mtok),
            busy_fraction=busy_fraction,
        )

    def can_edit(self, user) -> bool:
        """Members of the owning team edit; everyone logged in reads."""
        if not user.is_authenticated:
            return False
        return user.is_superuser or self.team.memberships.filter(user=user).exists()

    def slo_for(self, metric: str) -> float | None:
        return {
            "e2e": self.slo_p99_e2e_ms,
            "ttft": self.slo_p99_ttft_ms,
            "tpot": self.slo_p99_tpot_ms,
        }.get(metric)

    def slo_objects(self, saved: list[Slo] | None = None) -> list[Slo]:
        """The service's SLOs (`saved`: its Slo rows, when the caller read them in bulk).

        A service with no latency SLO keeps its "SLO P99" fields as the simple case: one
        implied (unsaved) latency SLO, "each of them met by 99% of requests over 28 days",
        which is what a P99 target says when read over a window."""
        # Imported here: dossiers.models.slo imports this module (Slo's key to Service).
        from dossiers.models.slo import Slo

        saved = list(self.slos.all()) if saved is None else saved
        if any(s.kind == Slo.Kind.LATENCY for s in saved):
            return saved
        thresholds = {m: self.slo_for(m) for m in ("ttft", "tpot", "e2e")}
        if not any(thresholds.values()):
            return saved
        implied = Slo(
            service=self,
            name="P99 latency (from the SLO P99 fields)",
            kind=Slo.Kind.LATENCY,
            target_percent=99.0,
            window_days=Slo.DEFAULT_WINDOW_DAYS,
            **{f"{m}_ms": v for m, v in thresholds.items()},
        )
        return [implied, *saved]

    def objectives(self) -> list[tuple[str, float, float]]:
        """Every latency objective as (metric "ttft" | "tpot" | "e2e", threshold ms, target
        fraction): ("ttft", 500.0, 0.99) reads "TTFT <= 500 ms for 99% of requests", i.e.
        ttft_p99_ms <= 500. The plain form other code (the planner, the gate) reads."""
        return [o for s in self.slo_objects() for o in s.objectives()]
