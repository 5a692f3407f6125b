"""A service's versioned writing: its narrative revisions and its serving config versions."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from analysis import configdiff
from dossiers.models.service import Service


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
