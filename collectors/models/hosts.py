"""GPU hosts (pushing through an agent or pulled from a URL), their agents' tokens, and the
batches they send."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q
from django.utils.timesince import timesince

from collectors.exposition import engines
from core.names import NAME_MAX_LENGTH
from core.outbound import OutboundRefused, check_url
from dossiers.models import Service

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
            pulled = f"pulled {_ago(self.last_pull_at, now)} ago" if self.last_pull_at else ""
            return "; ".join(part for part in (pulled, self.last_error) if part)
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
