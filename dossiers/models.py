"""The dossier: services and what people measure, write and decide about them.

Invariants live in the database (named constraints); cross-field rules in `clean()`;
the arithmetic (cost, margin, deltas) in the Django-free `analysis` package.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from analysis import configdiff, cost, plausibility
from analysis.percentiles import LATENCY_FIELDS, LATENCY_METRICS, PERCENTILE_LABELS
from analysis.runs import ENVIRONMENT_FIELDS, RESOURCE_FIELDS, THROUGHPUT_FIELDS, WORKLOAD_FIELDS
from core.names import NAME_MAX_LENGTH
from dossiers import slo_kinds


class Team(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=100)
    members = models.ManyToManyField(
        settings.AUTH_USER_MODEL, through="Membership", related_name="teams"
    )

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Membership(models.Model):
    class Role(models.TextChoices):
        OWNER = "owner", "Owner"
        MEMBER = "member", "Member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], name="membership_unique_team_user")
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


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


def _percent_between_50_and_100(value: float) -> None:
    if not 50 <= value < 100:
        raise ValidationError("A target is a percentage of requests, at least 50 and below 100.")


class Slo(models.Model):
    """A service level objective: the share of requests that must be good over a window.

    Its kind says which requests are good (`dossiers.slo_kinds`, one module a kind). Latency: a
    request is good when it meets every threshold set (TTFT, TPOT, end-to-end); goodput is good
    requests per second. Availability: a request is good when it did not fail.
    """

    class Kind:
        """The built-in kinds' names, for code that names one; every kind (these and any a
        module in `dossiers/slo_kinds/` registers) is in `slo_kinds.KINDS`."""

        LATENCY = "latency"
        AVAILABILITY = "availability"

    DEFAULT_WINDOW_DAYS = 28
    METRICS = ("ttft", "tpot", "e2e")

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="slos")
    name = models.CharField(max_length=80, help_text="e.g. Interactive latency.")
    kind = models.CharField(
        max_length=NAME_MAX_LENGTH, choices=slo_kinds.kind_choices, default=Kind.LATENCY
    )
    ttft_ms = models.FloatField(
        "TTFT at most (ms)", null=True, blank=True, validators=[MinValueValidator(0.001)]
    )
    tpot_ms = models.FloatField(
        "TPOT at most (ms)", null=True, blank=True, validators=[MinValueValidator(0.001)]
    )
    e2e_ms = models.FloatField(
        "end-to-end at most (ms)", null=True, blank=True, validators=[MinValueValidator(0.001)]
    )
    target_percent = models.FloatField(
        "target (% of requests good)",
        default=99.0,
        validators=[_percent_between_50_and_100],
        help_text="e.g. 99 or 99.9.",
    )
    window_days = models.PositiveIntegerField(
        "window (days)",
        default=DEFAULT_WINDOW_DAYS,
        validators=[MinValueValidator(1), MaxValueValidator(90)],
        help_text="Compliance and the error budget are counted over this many days.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    EDITABLE_FIELDS = ("name", "kind", "ttft_ms", "tpot_ms", "e2e_ms", "target_percent",
                       "window_days")  # fmt: skip

    class Meta:
        ordering = ["kind", "name"]
        constraints = [
            models.UniqueConstraint(fields=["service", "name"], name="slo_unique_name"),
            models.CheckConstraint(
                condition=Q(target_percent__gte=50) & Q(target_percent__lt=100),
                name="slo_target_percent_range",
            ),
            models.CheckConstraint(
                condition=Q(window_days__gte=1) & Q(window_days__lte=90), name="slo_window_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.service}: {self.name}"

    @property
    def target(self) -> float:
        return round(self.target_percent / 100.0, 10)  # 99.9 -> 0.999, not 0.99900...01

    @property
    def kind_spec(self) -> slo_kinds.SloKind | None:
        """This SLO's kind from the registry (None for a kind no module registers any more)."""
        return slo_kinds.get(self.kind)

    @property
    def thresholds_ms(self) -> dict[str, float]:
        """The latency thresholds set that the SLO's kind reads, by metric (none for
        availability)."""
        spec = self.kind_spec
        read = spec.fields if spec else ()
        return {
            m: v
            for m in self.METRICS
            if f"{m}_ms" in read and (v := getattr(self, f"{m}_ms")) is not None
        }

    def objectives(self) -> list[tuple[str, float, float]]:
        return [(m, v, self.target) for m, v in self.thresholds_ms.items()]

    @property
    def key(self) -> str:
        """The label an alert names this SLO by: its id, or "implied" for the P99 fields'."""
        return str(self.pk) if self.pk else "implied"

    @property
    def description(self) -> str:
        """ "TTFT <= 500 ms and TPOT <= 50 ms for 99% of requests over 28 days"."""
        spec = self.kind_spec
        what = spec.describe(self) if spec else f"(unknown kind {self.kind!r})"
        return f"{what} for {self.target_percent:g}% of requests over {self.window_days} days"

    def clean(self) -> None:
        spec = self.kind_spec
        if spec is not None:  # an unknown kind: the field's choices already name it
            spec.validate(self)


class NarrativeRevision(models.Model):
    """One saved version of the service's narrative (Markdown). The newest is current."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveIntegerField()
    body = models.TextField(blank=True)
    summary = models.CharField("summary of change", max_length=200, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-number"]
        constraints = [
            models.UniqueConstraint(fields=["service", "number"], name="revision_unique_number")
        ]

    def __str__(self) -> str:
        return f"{self.service} narrative r{self.number}"


class ConfigVersion(models.Model):
    """The service's serving config (JSON) as deployed; one per service is current."""

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="config_versions")
    version = models.PositiveIntegerField()
    config = models.JSONField()
    note = models.CharField(max_length=300, blank=True)
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    is_current = models.BooleanField(default=False)
    made_current_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When it last became the current config (None: never, as far as we know).",
    )

    class Meta:
        ordering = ["-version"]
        constraints = [
            models.UniqueConstraint(fields=["service", "version"], name="config_unique_version"),
            models.UniqueConstraint(
                fields=["service"],
                condition=Q(is_current=True),
                name="config_one_current_per_service",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.service} config v{self.version}"

    def clean(self) -> None:
        if not isinstance(self.config, dict):
            raise ValidationError({"config": "The config must be a JSON object."})

    def diff_from(self, other: ConfigVersion | None) -> list[str]:
        """Unified diff lines from `other` (older) to this version."""
        return configdiff.unified_diff(
            other.config if other else {},
            self.config,
            from_name=f"v{other.version}" if other else "(none)",
            to_name=f"v{self.version}",
        )


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


class MeasuredRun(models.Model):
    """What a measured run records: workload, environment, results (DESIGN.md section 1).

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


class Bottleneck(models.Model):
    class Layer(models.TextChoices):
        SCHEDULING = "scheduling", "business / scheduling"
        FRAMEWORK = "framework", "serving framework"
        MODEL = "model", "model execution"
        HARDWARE = "hardware", "hardware"

    class Kind(models.TextChoices):
        COMPUTE = "compute", "compute-bound"
        MEMORY_BANDWIDTH = "memory_bandwidth", "memory-bandwidth-bound"
        COMMUNICATION = "communication", "communication-bound"
        CPU = "cpu", "CPU-side"
        IO = "io", "IO"
        QUEUEING = "queueing", "queueing / scheduling overhead"
        MEMORY_CAPACITY = "memory_capacity", "memory capacity"

    class Status(models.TextChoices):
        SUSPECTED = "suspected", "suspected"
        CONFIRMED = "confirmed", "confirmed"
        MITIGATED = "mitigated", "mitigated"
        WONT_FIX = "wont_fix", "won't fix"

    OPEN_STATUSES = (Status.SUSPECTED, Status.CONFIRMED)

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="bottlenecks")
    title = models.CharField(max_length=200)
    layer = models.CharField(max_length=20, choices=Layer.choices)
    kind = models.CharField(max_length=20, choices=Kind.choices)
    symptom = models.TextField()
    evidence = models.TextField(blank=True)
    evidence_baselines = models.ManyToManyField(Baseline, blank=True, related_name="bottlenecks")
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.SUSPECTED)
    identified_on = models.DateField()
    resolved_on = models.DateField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-identified_on", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=Q(resolved_on__isnull=True)
                | Q(resolved_on__gte=models.F("identified_on")),
                name="bottleneck_resolved_after_identified",
            )
        ]

    def __str__(self) -> str:
        return self.title

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN_STATUSES

    def clean(self) -> None:
        if self.resolved_on and self.identified_on and self.resolved_on < self.identified_on:
            raise ValidationError({"resolved_on": "Cannot be resolved before it was identified."})


class Experiment(models.Model):
    """One optimization attempt: a hypothesis, one variable changed, judged by two baselines."""

    class Verdict(models.TextChoices):
        PENDING = "pending", "pending"
        ADOPTED = "adopted", "adopted"
        REVERTED = "reverted", "reverted"
        INCONCLUSIVE = "inconclusive", "inconclusive"

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="experiments")
    title = models.CharField(max_length=200)
    hypothesis = models.TextField()
    variable_key = models.CharField(
        "variable changed", max_length=120, help_text="Config key, dotted for nesting."
    )
    value_from = models.CharField("from", max_length=200)
    value_to = models.CharField("to", max_length=200)
    before = models.ForeignKey(
        Baseline, on_delete=models.RESTRICT, related_name="experiments_before"
    )
    after = models.ForeignKey(
        Baseline,
        on_delete=models.RESTRICT,
        related_name="experiments_after",
        null=True,
        blank=True,
    )
    verdict = models.CharField(max_length=12, choices=Verdict.choices, default=Verdict.PENDING)
    notes = models.TextField(blank=True)
    run_on = models.DateField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-run_on", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(before=models.F("after")), name="experiment_before_is_not_after"
            )
        ]

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        errors = {}
        if self.before_id and self.before.service_id != self.service_id:
            errors["before"] = "The before baseline belongs to another service."
        if self.after_id and self.after.service_id != self.service_id:
            errors["after"] = "The after baseline belongs to another service."
        if self.before_id and self.before_id == self.after_id:
            errors["after"] = "Before and after must be two different measurements."
        if errors:
            raise ValidationError(errors)

    def deltas(self) -> list[cost.MetricDelta]:
        """Measured change per metric, before -> after (only metrics both sides have)."""
        if self.after is None:
            return []
        return cost.run_deltas(_run_values(self.before), _run_values(self.after))

    def other_changed_keys(self) -> list[str] | None:
        """Config keys that changed besides the declared one; None when a config is missing."""
        before_cfg = self.before.config_version
        after_cfg = self.after.config_version if self.after else None
        if before_cfg is None or after_cfg is None:
            return None
        changed = configdiff.changed_keys(before_cfg.config, after_cfg.config)
        return sorted(key for key in changed if key != self.variable_key)

    @property
    def more_than_one_variable(self) -> bool:
        return bool(self.other_changed_keys())


def _run_values(run: MeasuredRun) -> dict[str, float | None]:
    names = ["qps", "output_tps", "input_tps", "gpu_util", "sm_active", "dram_active"]
    names += LATENCY_FIELDS
    return {name: getattr(run, name) for name in names}
