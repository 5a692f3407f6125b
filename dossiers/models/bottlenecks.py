"""Bottlenecks: what limits a service, at which layer, and with what evidence."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from dossiers.models.runs import Baseline
from dossiers.models.service import Service


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
