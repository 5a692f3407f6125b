"""Alert rules, their live instances and history, receivers, silences and the notification log.

Invariants in the database: one live (pending or firing) instance per fingerprint, one
notification per receiver + group + evaluation time, one log row per receiver + group.
"""

from __future__ import annotations

import re

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models
from django.db.models import Q
from django.urls import reverse

from alerts import kinds, receivers
from analysis.alerting import Direction, Health, State, Thresholds
from core.names import NAME_MAX_LENGTH
from core.templatetags.display import ms, percent
from core.validators import validate_http_url
from dossiers.models import Service, Team


class Severity(models.TextChoices):
    INFO = "info", "info"
    WARNING = "warning", "warning"
    CRITICAL = "critical", "critical"


class Rule(models.Model):
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="alert_rules")
    name = models.CharField(max_length=120)
    kind = models.CharField(max_length=NAME_MAX_LENGTH, choices=kinds.kind_choices)
    threshold = models.FloatField()
    resolve_threshold = models.FloatField(
        null=True,
        blank=True,
        help_text="Hysteresis: a firing alert resolves only past this value. Blank: the threshold.",
    )
    window_s = models.PositiveIntegerField(
        "window (s)", default=300, validators=[MinValueValidator(60)]
    )
    for_s = models.PositiveIntegerField("for (s)", default=300)
    keep_firing_for_s = models.PositiveIntegerField("keep firing for (s)", default=0)
    min_requests = models.PositiveIntegerField(
        "minimum requests",
        default=100,
        help_text="Latency and cost rules: below this many requests the window is insufficient.",
    )
    severity = models.CharField(max_length=10, choices=Severity.choices, default=Severity.WARNING)
    labels = models.JSONField(default=dict, blank=True)
    enabled = models.BooleanField(default=True)
    is_default = models.BooleanField(default=False, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    # Evaluation bookkeeping: `last_evaluated_at` is the per-rule claim of an evaluation time.
    last_evaluated_at = models.DateTimeField(null=True, blank=True, editable=False)
    health = models.CharField(
        max_length=20,
        choices=[(h.value, h.value.replace("_", " ")) for h in Health],
        default=Health.OK,
        editable=False,
    )
    health_reason = models.CharField(max_length=300, blank=True, editable=False)
    last_value = models.FloatField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["service__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["service", "name"], name="alertrule_unique_name"),
            models.CheckConstraint(condition=Q(window_s__gte=60), name="alertrule_window_min"),
        ]
        # No index holds the evaluation columns (stamp, health, value), so the minute's
        # UPDATE of every rule is a heap-only one (HOT) where the page has room (migration
        # 0005 leaves 30% free): no index entries to add, no table growth between vacuums.
        # The claim walks the service index in order instead (`alerts.evaluation`).

    def __str__(self) -> str:
        return f"{self.service}: {self.name}"

    def get_absolute_url(self) -> str:
        return reverse("alerts:rule_edit", args=[self.pk])

    @property
    def kind_spec(self) -> kinds.RuleKind | None:
        """This rule's kind from the registry (None for a kind no module registers any more)."""
        return kinds.get(self.kind)

    @property
    def direction(self) -> Direction:
        spec = self.kind_spec
        return spec.direction if spec else Direction.ABOVE

    @property
    def unit(self) -> str:
        spec = self.kind_spec
        return spec.unit if spec else ""

    def format_value(self, value: float | None) -> str:
        """A value in the rule's unit, as people read it: "2,150 ms", "31.0%", "+12.5%".

        Milliseconds and ratios are rounded as every other page rounds them (the dossier's
        filters), so an alert's margin reads the same as the fleet's and the dossier's.
        """
        if value is None:
            return "—"
        if self.unit == "ratio":
            return percent(value)
        if self.unit == "ms":
            return f"{ms(value)} ms"
        if self.unit == "%":
            return f"{value:+.1f}%"
        if self.unit == "s":
            return f"{value:,.0f} s"
        if self.unit == "x":
            return f"{value:,.1f}x"
        return f"{value:,.4g} {self.unit}" if abs(value) < 1000 else f"{value:,.0f} {self.unit}"

    @property
    def window_display(self) -> str:
        """The live window each value is measured over, as the pages say it: "live, last 60 min"."""
        span = f"{self.window_s // 60} min" if self.window_s % 60 == 0 else f"{self.window_s} s"
        return f"live, last {span}"

    @property
    def threshold_display(self) -> str:
        return self.format_value(self.threshold)

    @property
    def resolve_display(self) -> str:
        return self.format_value(self.thresholds().resolve)

    @property
    def last_value_display(self) -> str:
        return self.format_value(self.last_value)

    def thresholds(self) -> Thresholds:
        return Thresholds(
            direction=self.direction,
            threshold=self.threshold,
            resolve_threshold=self.resolve_threshold,
            for_s=self.for_s,
            keep_firing_for_s=self.keep_firing_for_s,
            inclusive=bool(self.kind_spec and self.kind_spec.inclusive),
        )

    def clean(self) -> None:
        errors = {}
        if self.kind and self.threshold is not None:
            try:
                self.thresholds()
            except ValueError as exc:
                errors["resolve_threshold"] = str(exc).split(": ", 1)[-1]
        if not isinstance(self.labels, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in (self.labels or {}).items()
        ):
            errors["labels"] = 'Labels are a JSON object of strings, e.g. {"team": "infra"}.'
        elif any(not LABEL_NAME.match(k) for k in self.labels):
            errors["labels"] = "Label names are letters, digits and underscores."
        if errors:
            raise ValidationError(errors)


LABEL_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class AlertInstanceQuerySet(models.QuerySet):
    def live(self) -> AlertInstanceQuerySet:
        return self.filter(state__in=AlertInstance.LIVE_STATES)


class AlertInstance(models.Model):
    """One alert of one rule for one identity (the service, or one host of it)."""

    LIVE_STATES = (State.PENDING, State.FIRING)
    SERIES_MAX_POINTS = 1440

    id = models.BigAutoField(primary_key=True)
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="instances")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="alert_instances")
    fingerprint = models.CharField(max_length=16)
    labels = models.JSONField(default=dict)
    annotations = models.JSONField(default=dict)
    state = models.CharField(
        max_length=10, choices=[(s.value, s.value) for s in State], default=State.PENDING
    )
    value = models.FloatField(null=True)
    threshold = models.FloatField()
    pending_since = models.DateTimeField(null=True)
    fired_at = models.DateTimeField(null=True)
    last_active_at = models.DateTimeField(null=True)
    resolved_at = models.DateTimeField(null=True)
    ended_at = models.DateTimeField(null=True, help_text="Resolved, or pending cancelled.")
    last_evaluated_at = models.DateTimeField()
    series = models.JSONField(default=list, help_text="[[epoch seconds, value], ...] while live.")
    created_at = models.DateTimeField(auto_now_add=True)

    objects = AlertInstanceQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["fingerprint"],
                condition=Q(state__in=["pending", "firing"]),
                name="alertinstance_one_live_per_fingerprint",
            )
        ]
        indexes = [
            models.Index(fields=["service", "state"], name="alertinstance_svc_state"),
            models.Index(fields=["fingerprint", "-created_at"], name="alertinstance_fp_recent"),
        ]

    def __str__(self) -> str:
        return f"{self.rule.name} [{self.state}]"

    def get_absolute_url(self) -> str:
        return reverse("alerts:alert_detail", args=[self.pk])

    @property
    def is_live(self) -> bool:
        return self.state in self.LIVE_STATES

    @property
    def value_display(self) -> str:
        return self.rule.format_value(self.value)

    @property
    def value_caption(self) -> str:
        """What the value is: the live window's while the alert is live; once it has ended,
        the last evaluation's before the end (not a live figure any more)."""
        if self.is_live or self.ended_at is None:
            return self.rule.window_display
        span = self.rule.window_display.removeprefix("live, ")
        return f"{span} to {self.ended_at:%Y-%m-%d %H:%M} UTC, when it ended"

    @property
    def identity(self) -> str:
        """The labels that tell this alert from its rule's others (e.g. the host)."""
        return ", ".join(f"{k}={v}" for k, v in sorted(self.labels.items()) if k == "host")


class AlertEvent(models.Model):
    """History: every state change of an instance and every change of a rule's health."""

    class Kind(models.TextChoices):
        PENDING = "pending", "pending"
        FIRING = "firing", "firing"
        RESOLVED = "resolved", "resolved"
        INACTIVE = "inactive", "pending cancelled"
        NO_DATA = "no_data", "no data"
        INSUFFICIENT_DATA = "insufficient_data", "insufficient data"
        ERROR = "error", "evaluation error"
        OK = "ok", "data back"

    id = models.BigAutoField(primary_key=True)
    rule = models.ForeignKey(Rule, on_delete=models.CASCADE, related_name="events")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="alert_events")
    instance = models.ForeignKey(
        AlertInstance, null=True, blank=True, on_delete=models.CASCADE, related_name="events"
    )
    at = models.DateTimeField()
    kind = models.CharField(max_length=20, choices=Kind.choices)
    value = models.FloatField(null=True)
    threshold = models.FloatField(null=True)
    count = models.PositiveIntegerField(null=True)
    reason = models.CharField(max_length=300, blank=True)

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["service", "at"], name="alertevent_svc_at")]

    def __str__(self) -> str:
        return f"{self.rule.name} {self.kind} at {self.at:%Y-%m-%d %H:%M}"

    @property
    def value_display(self) -> str:
        return self.rule.format_value(self.value)


class Receiver(models.Model):
    """Where a team's alerts go: a webhook, an Alertmanager, email, or any kind a module in
    `alerts/receivers/` registers (the kind says how it is validated, told and sent)."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_receivers")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=NAME_MAX_LENGTH, choices=receivers.kind_choices)
    url = models.CharField(blank=True, max_length=500, validators=[validate_http_url])
    emails = models.CharField(max_length=500, blank=True, help_text="Comma-separated addresses.")
    send_resolved = models.BooleanField(default=True)
    repeat_interval_s = models.PositiveIntegerField(
        "repeat every (s)", default=4 * 3600, validators=[MinValueValidator(60)]
    )
    enabled = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team__name", "name"]
        constraints = [
            models.UniqueConstraint(fields=["team", "name"], name="receiver_unique_name"),
            models.CheckConstraint(
                condition=~Q(kind="webhook") | ~Q(url=""), name="receiver_webhook_needs_url"
            ),
            models.CheckConstraint(
                condition=~Q(kind="email") | ~Q(emails=""), name="receiver_email_needs_address"
            ),
            models.CheckConstraint(
                condition=~Q(kind="alertmanager") | ~Q(url=""),
                name="receiver_alertmanager_needs_url",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.team}: {self.name}"

    @property
    def email_list(self) -> list[str]:
        return [e.strip() for e in self.emails.split(",") if e.strip()]

    @property
    def target(self) -> str:
        kind = receivers.KINDS.get(self.kind)
        return getattr(self, kind.target_field) if kind else self.url or self.emails

    @property
    def target_masked(self) -> str:
        """The target without its secrets, for people outside the team (the kind says how)."""
        kind = receivers.KINDS.get(self.kind)
        return kind.target_masked(self) if kind else "…"

    def clean(self) -> None:
        kind = receivers.KINDS.get(self.kind)
        if kind is None:
            raise ValidationError({"kind": f"Unknown receiver kind {self.kind!r}."})
        kind.clean(self)


class Silence(models.Model):
    """Mutes a team's alerts whose labels match every matcher, between two times."""

    OPERATORS = ("=", "!=", "=~")

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="alert_silences")
    matchers = models.JSONField(help_text='[{"name": "service", "op": "=", "value": "chat-7b"}]')
    starts_at = models.DateTimeField()
    ends_at = models.DateTimeField()
    comment = models.CharField(max_length=300)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-ends_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(ends_at__gt=models.F("starts_at")), name="silence_ends_after_start"
            )
        ]
        indexes = [models.Index(fields=["team", "ends_at"], name="silence_team_ends")]

    def __str__(self) -> str:
        return f"silence {self.matchers_text}"

    @property
    def matchers_text(self) -> str:
        return ", ".join(f'{m["name"]}{m["op"]}"{m["value"]}"' for m in self.matchers or [])

    def clean(self) -> None:
        from analysis.silences import parse_matchers

        if not isinstance(self.matchers, list) or not self.matchers:
            raise ValidationError({"matchers": "At least one matcher."})
        try:
            parse_matchers(self.matchers)
        except ValueError as exc:
            raise ValidationError({"matchers": str(exc)}) from None
        if self.starts_at and self.ends_at and self.ends_at <= self.starts_at:
            raise ValidationError({"ends_at": "The silence must end after it starts."})


class NotificationLog(models.Model):
    """What a receiver was last told about a group: the dedup state (Alertmanager's nflog)."""

    receiver = models.ForeignKey(Receiver, on_delete=models.CASCADE, related_name="logs")
    group_key = models.CharField(max_length=200)
    firing = models.JSONField(default=list, help_text="Fingerprints last notified as firing.")
    last_sent_at = models.DateTimeField(null=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["receiver", "group_key"], name="nflog_unique_group")
        ]

    def __str__(self) -> str:
        return f"{self.receiver} {self.group_key}"


class Notification(models.Model):
    """One message to one receiver; sent after commit by a task that claims it."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        SENDING = "sending", "sending"
        SENT = "sent", "sent"
        RETRYING = "retrying", "failed, will retry"
        FAILED = "failed", "failed"

    id = models.BigAutoField(primary_key=True)
    receiver = models.ForeignKey(Receiver, on_delete=models.CASCADE, related_name="notifications")
    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="+")
    rule = models.ForeignKey(Rule, null=True, on_delete=models.SET_NULL, related_name="+")
    group_key = models.CharField(max_length=200)
    evaluated_at = models.DateTimeField()
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    alert_status = models.CharField(max_length=10)  # firing | resolved, as in the body
    payload = models.JSONField()
    attempts = models.PositiveIntegerField(default=0)
    last_error = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    claimed_at = models.DateTimeField(null=True)
    sent_at = models.DateTimeField(null=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["receiver", "group_key", "evaluated_at"],
                name="notification_once_per_evaluation",
            )
        ]
        indexes = [
            models.Index(
                fields=["created_at"],
                condition=Q(status__in=["queued", "retrying"]),
                name="notification_unsent",
            )
        ]

    def __str__(self) -> str:
        return f"{self.alert_status} to {self.receiver} ({self.status})"
