"""Load-test runs, their per-request sketches, and release-gate runs.

The tables keep the names they had when these models lived in `dossiers` (migration
`loadtests.0001` moved them by state only, so no data was copied).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse

from core.names import NAME_MAX_LENGTH
from dossiers.models import Baseline, MeasuredRun, Service, Team


class CIToken(models.Model):
    """A CI machine's credential: one service, or every service of a team (`service` blank),
    with the permissions it was given. The plaintext (`phc_<prefix>_<secret>`) is shown once;
    we keep the prefix and a SHA-256 (core.credentials), so SECRET_KEY plays no part."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="ci_tokens")
    service = models.ForeignKey(
        Service,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="ci_tokens",
        help_text="Blank: every service of the team.",
    )
    label = models.CharField(max_length=100, blank=True)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    can_import = models.BooleanField("may import load tests", default=True)
    can_promote = models.BooleanField("may promote a baseline", default=False)
    can_gate = models.BooleanField("may run the gate", default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Action(models.TextChoices):
        IMPORT = "import", "import load tests"
        PROMOTE = "promote", "promote a baseline"
        GATE = "gate", "run the gate"

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.credential_label

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    @property
    def scope_label(self) -> str:
        return self.service.slug if self.service_id else f"every service of {self.team.name}"

    @property
    def credential_label(self) -> str:
        """How records name it: prefix (public) and label, never the secret."""
        label = f" “{self.label}”" if self.label else ""
        return f"CI token phc_{self.prefix}…{label}"

    @property
    def permissions_label(self) -> str:
        allowed = [
            (self.can_import, "import"),
            (self.can_promote, "promote"),
            (self.can_gate, "gate"),
        ]
        return ", ".join(name for ok, name in allowed if ok) or "nothing"

    def refusal(self, service: Service, action: str | None) -> str | None:
        """Why this token may not do `action` on `service` (None: read it, which any
        permission allows in scope), or None when it may."""
        in_scope = (
            self.service_id == service.pk if self.service_id else self.team_id == service.team_id
        )
        if not in_scope:
            return f"{self.credential_label} is scoped to {self.scope_label}, not {service.slug}."
        if action is None:
            return None
        allowed = {
            self.Action.IMPORT: self.can_import,
            self.Action.PROMOTE: self.can_promote,
            self.Action.GATE: self.can_gate,
        }[action]
        if not allowed:
            return f"{self.credential_label} may not {self.Action(action).label}."
        return None


class LoadTest(MeasuredRun):
    """One run from a load-test tool's result file (vLLM bench, GenAI-Perf, guidellm, llmperf).

    Re-importing the same file for the same service is a no-op: a run is identified by the
    file's SHA-256 and its position in the file. Per-request arrays are kept as sketches
    (`LoadTestSketch`), not as raw values.
    """

    class Origin(models.TextChoices):
        CLI = "cli", "command line"
        API = "api", "API"
        WEB = "web", "upload form"
        GATE = "gate", "release gate candidate"
        DEMO = "demo", "demo data"

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="load_tests")
    label = models.CharField(max_length=200)
    format = models.CharField(max_length=NAME_MAX_LENGTH)
    tool_version = models.CharField(max_length=40, blank=True)
    source_name = models.CharField("file name", max_length=255, blank=True)
    content_sha256 = models.CharField(max_length=64)
    run_index = models.PositiveIntegerField(help_text="Position of the run in its file, from 0.")
    origin = models.CharField(max_length=10, choices=Origin.choices, default=Origin.WEB)
    imported_at = models.DateTimeField(auto_now_add=True)
    imported_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    ci_token = models.ForeignKey(
        CIToken,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The CI token that imported it through the API.",
    )
    errors = models.PositiveIntegerField("failed requests", null=True, blank=True)
    request_rate_inf = models.BooleanField(
        "unlimited request rate", default=False, help_text="All requests sent at once (rate inf)."
    )
    extra = models.JSONField(default=dict, blank=True)
    failure = models.CharField(
        max_length=200,
        blank=True,
        help_text="Why the run counts as failed (no request succeeded); empty when it did not. "
        "A failed run's statistics are absent, and it is never a baseline or a gate reference.",
    )
    date_known = models.BooleanField(
        default=True,
        help_text="False when neither the file nor the importer gave a time: measured_at is "
        "then the import time and the run is shown as “date unknown”.",
    )
    lint = models.JSONField(
        default=list,
        blank=True,
        help_text="Lint findings at import (loadtests.lint): check, severity (warn / refuse), "
        "message, fix, evidence. A refusing finding blocks promotion without an override.",
    )
    fingerprint = models.JSONField(
        default=dict,
        blank=True,
        help_text="The workload fingerprint (analysis.fingerprint): prompt and output length "
        "quantiles, concurrency or rate, dataset, ignore_eos, streaming.",
    )
    lint_override = models.JSONField(
        default=dict,
        blank=True,
        help_text="Who promoted this run despite refusing findings, when, why, and which.",
    )
    promotion_batch = models.CharField(
        max_length=32,
        blank=True,
        help_text="Runs promoted together (one import of several repeats) share this id: the "
        "gate keeps them in one reference set whatever the regime test says.",
    )
    promoted_to = models.OneToOneField(
        Baseline,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="source_load_test",
        help_text="The baseline this run was promoted to.",
    )

    class Meta:
        db_table = "dossiers_loadtest"
        ordering = ["-measured_at", "run_index"]
        constraints = [
            models.UniqueConstraint(
                fields=["service", "content_sha256", "run_index"],
                name="loadtest_unique_run_per_file",
            ),
            models.CheckConstraint(
                condition=Q(concurrency__isnull=True) | Q(concurrency__gte=1),
                name="loadtest_concurrency_positive",
            ),
        ]
        indexes = [
            models.Index(fields=["service", "-measured_at"], name="loadtest_service_measured"),
        ]

    def __str__(self) -> str:
        return f"{self.service}: {self.label}"

    @property
    def failed(self) -> bool:
        return bool(self.failure)

    @property
    def findings(self) -> list[dict]:
        """Lint findings, refusing ones first (the order the run page lists them in)."""
        return sorted(self.lint or [], key=lambda f: f.get("severity") != "refuse")

    @property
    def refusing_findings(self) -> list[dict]:
        return [f for f in self.lint or [] if f.get("severity") == "refuse"]

    def get_absolute_url(self) -> str:
        return reverse("loadtests:detail", args=[self.service.slug, self.pk])

    def window(self) -> tuple[datetime, datetime] | None:
        """When the run's requests ran, from the file's time and duration; None when the file
        gave no time. vLLM stamps its file when the run ends; the other tools at its start."""
        if not self.date_known or not self.duration_s:
            return None
        span = timedelta(seconds=self.duration_s)
        if self.format in ENDS_AT_MEASURED:
            return self.measured_at - span, self.measured_at
        return self.measured_at, self.measured_at + span


# Formats whose time is taken as the run ends (vLLM's `date` is written when it saves).
ENDS_AT_MEASURED = frozenset({"vllm-bench"})


class LoadTestSketch(models.Model):
    """A load test's per-request distribution of one latency family, as a DDSketch (ms).

    Count, sum, min and max sit in columns beside the compressed sketch (docs/method.md).
    """

    class Family(models.TextChoices):
        TTFT = "ttft", "TTFT"
        TPOT = "tpot", "TPOT"
        ITL = "itl", "inter-token latency"
        E2E = "e2e", "end-to-end"

    load_test = models.ForeignKey(LoadTest, on_delete=models.CASCADE, related_name="sketches")
    family = models.CharField(max_length=4, choices=Family.choices)
    sketch = models.BinaryField()
    count = models.PositiveIntegerField()
    sum_ms = models.FloatField()
    min_ms = models.FloatField(null=True, blank=True)
    max_ms = models.FloatField(null=True, blank=True)

    class Meta:
        db_table = "dossiers_loadtestsketch"
        constraints = [
            models.UniqueConstraint(
                fields=["load_test", "family"], name="loadtestsketch_one_per_family"
            )
        ]

    def __str__(self) -> str:
        return f"{self.load_test} {self.family} ({self.count} {self.counted_as})"

    @property
    def counted_as(self) -> str:
        """What `count` counts: requests, except ITL's token gaps (a request adds n - 1)."""
        return "token gaps" if self.family == self.Family.ITL else "requests"


class GateRun(models.Model):
    """One run of the release gate: a candidate load test judged against a baseline."""

    class Verdict(models.TextChoices):
        PASS = "pass", "pass"
        REGRESSION = "regression", "regression"
        REFUSED = "refused", "refused"

    class Source(models.TextChoices):
        CLI = "cli", "command line"
        API = "api", "API"
        WEB = "web", "web"

    service = models.ForeignKey(Service, on_delete=models.CASCADE, related_name="gate_runs")
    candidate = models.ForeignKey(LoadTest, on_delete=models.CASCADE, related_name="gate_runs")
    baseline = models.ForeignKey(
        Baseline, null=True, blank=True, on_delete=models.SET_NULL, related_name="gate_runs"
    )
    # Every candidate run (repeats of one build) and the baseline set it was judged against;
    # `candidate` and `baseline` above are the first of each.
    candidates = models.ManyToManyField(LoadTest, blank=True, related_name="gate_runs_as_repeat")
    baseline_set = models.ManyToManyField(Baseline, blank=True, related_name="gate_runs_in_set")
    verdict = models.CharField(max_length=12, choices=Verdict.choices)
    result = models.JSONField(
        default=dict, help_text="GateResult.to_dict(), or {'reasons': [...]} when refused."
    )
    table = models.TextField(blank=True)
    source = models.CharField(max_length=4, choices=Source.choices)
    ci_token = models.ForeignKey(
        CIToken,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The CI token that ran it through the API.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "dossiers_gaterun"
        ordering = ["-created_at", "-pk"]
        indexes = [
            models.Index(fields=["service", "-created_at"], name="gaterun_service_created"),
        ]

    def __str__(self) -> str:
        return f"{self.service} gate {self.verdict} ({self.created_at:%Y-%m-%d %H:%M})"

    def get_absolute_url(self) -> str:
        return reverse("loadtests:gate_run", args=[self.service.slug, self.pk])

    @property
    def reasons(self) -> list[str]:
        return list(self.result.get("reasons", [])) if self.verdict == self.Verdict.REFUSED else []


def source_run(baseline: Baseline) -> LoadTest | None:
    """The load-test run a baseline was promoted from, if it was promoted from one."""
    try:
        return baseline.source_load_test
    except LoadTest.DoesNotExist:
        return None
