"""Service level objectives: the share of a service's requests that must be good."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from core.names import NAME_MAX_LENGTH
from dossiers import slo_kinds
from dossiers.models.service import Service


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
