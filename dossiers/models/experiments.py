"""Experiments: one variable changed, judged by a before and an after baseline."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from analysis import configdiff, cost, headline
from analysis.percentiles import LATENCY_FIELDS
from core.labels import FIELD_LABELS
from dossiers.models.runs import Baseline, MeasuredRun
from dossiers.models.service import Service


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
    # Blank: not stated; the headline then reads the target from the hypothesis, if it names one.
    target = models.CharField(
        "target figure",
        max_length=20,
        choices=[(name, FIELD_LABELS[name]) for name in headline.TARGETS],
        blank=True,
        default="",
        help_text="The figure the change aims to move; the card's summary leads with it. Blank: "
        "the latency figure the hypothesis names (e.g. “TTFT P99”), else E2E P99.",
    )
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
    # Every save (a verdict given, a note added): what a CI job polling for verdicts asks about.
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-run_on", "-pk"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(before=models.F("after")), name="experiment_before_is_not_after"
            )
        ]

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        """Its card on the dossier: experiments have no page of their own."""
        return f"{self.service.get_absolute_url()}#experiment-{self.pk}"

    def clean(self) -> None:
        errors = {}
        if self.before_id and self.before.service_id != self.service_id:
            errors["before"] = "The before baseline belongs to another service."
        if self.after_id and self.after.service_id != self.service_id:
            errors["after"] = "The after baseline belongs to another service."
        if self.before_id and self.before_id == self.after_id:
            errors["after"] = "Before and after must be two different measurements."
        # An unknown target is refused by the field's choices (clean_fields), not read here.
        if self.target in headline.TARGETS and (unmeasured := self._unmeasured_target_sides()):
            errors["target"] = (
                f"{self.get_target_display()} was not measured by the "
                f"{' and '.join(unmeasured)} baseline{'s' if len(unmeasured) > 1 else ''}: "
                "state a figure both measured, or leave it blank."
            )
        if errors:
            raise ValidationError(errors)

    def _unmeasured_target_sides(self) -> list[str]:
        """The sides ("before", "after") given whose baseline has no value of the target: with
        such a target the headline cannot lead with it. A side not given yet is not judged."""
        return [
            side
            for side in ("before", "after")
            if getattr(self, f"{side}_id") and getattr(getattr(self, side), self.target) is None
        ]

    def deltas(self) -> list[cost.MetricDelta]:
        """Measured change per metric, before -> after (only metrics both sides have)."""
        if self.after is None:
            return []
        return cost.run_deltas(_run_values(self.before), _run_values(self.after))

    def headline(self) -> headline.Headline | None:
        """The change the card's summary leads with: the stated target, else the figure the
        hypothesis names, else the default; never a percentile with too few requests behind it:
        neither one the gate's reading in the notes called so, nor one the baselines' request
        counts are too few for by the gate's rule (`analysis.headline`)."""
        if self.after is None:
            return None
        unjudgeable = headline.gate_too_few(self.notes) | headline.too_few_requests(
            self.before.request_count, self.after.request_count
        )
        target, source = headline.target_of(self.target, self.hypothesis)
        return headline.choose(self.deltas(), target=target, source=source, unjudgeable=unjudgeable)

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
