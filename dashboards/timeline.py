"""A service's timeline: alerts, deploys, baselines, experiments, gate runs, load-test history
steps and live changes as dated markers, for the timeline page and the lines on its charts.

A fixed number of queries whatever the range (the tests hold each page to a budget).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time

from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from alerts.models import AlertEvent
from alerts.selectors import alert_history_for_service, recent_history_for_service
from dashboards.live_changes import LiveChange, live_changes
from dossiers.models import Baseline, ConfigVersion, Experiment, Service
from loadtests.history import HistoryChange, history_changes
from loadtests.models import GateRun, source_run

# Alert history kinds worth a line on a chart; the timeline lists every transition but these
# are the ones a reader of a latency chart needs ("it fired here, it resolved there").
CHART_ALERT_KINDS = (AlertEvent.Kind.FIRING, AlertEvent.Kind.RESOLVED)
MAX_MARKERS = 60


@dataclass(frozen=True)
class Marker:
    """Something that happened to the service at a moment: drawn on charts, listed in the
    timeline. `tone` picks the colour: bad (firing), ok (resolved, pass), info, warn."""

    kind: str  # "alert" | "deploy" | "experiment" | "gate" | "change" | "baseline"
    at: datetime
    title: str
    detail: str = ""
    url: str = ""
    tone: str = "info"
    count: int = 1  # how many happenings it stands for (gate passes in a row are one marker)

    @property
    def group(self) -> str:
        """The timeline filter it falls under (TIMELINE_FILTERS)."""
        return MARKER_GROUPS.get(self.kind, self.kind)


# The dossier timeline's filters, in order: a group and its label. Deploys, config versions and
# baseline promotions are one group (what runs, and what it is measured against).
TIMELINE_FILTERS = (
    ("alert", "Alerts"),
    ("deploy", "Deploys and config"),
    ("experiment", "Experiments"),
    ("gate", "Gate runs"),
    ("change", "Steps in live and load-test data"),
)
MARKER_GROUPS = {"baseline": "deploy"}


def _link(name: str, *args) -> str:
    """The URL, or "" while the page it names is not wired (alerts and load-test pages)."""
    try:
        return reverse(name, args=args)
    except NoReverseMatch:
        return ""


def midnight(d: date) -> datetime:
    return datetime.combine(d, time.min, tzinfo=UTC)


def _alert_markers(events: list[AlertEvent]) -> list[Marker]:
    tones = {
        AlertEvent.Kind.FIRING: "bad",
        AlertEvent.Kind.RESOLVED: "ok",
        AlertEvent.Kind.PENDING: "warn",
        AlertEvent.Kind.INACTIVE: "ok",
        AlertEvent.Kind.NO_DATA: "warn",
        AlertEvent.Kind.INSUFFICIENT_DATA: "warn",
        AlertEvent.Kind.ERROR: "bad",
    }
    markers = []
    for event in events:
        detail = event.reason
        if event.value is not None and event.threshold is not None:
            # In the rule's own unit and format ("2,150 ms", "34%"), as the alert pages show it;
            # not again where the reason already says both ("value 3,520 ms > threshold ...").
            fmt = event.rule.format_value
            value, threshold = fmt(event.value), fmt(event.threshold)
            if not (value in detail and threshold in detail):
                detail = f"{value} against a threshold of {threshold}. {detail}"
        url = _link("alerts:alert_detail", event.instance_id) if event.instance_id else ""
        markers.append(
            Marker(
                kind="alert",
                at=event.at,
                title=f"{event.rule.name}: {event.get_kind_display()}",
                detail=detail.strip(),
                url=url,
                tone=tones.get(event.kind, "info"),
            )
        )
    return markers


def _deploy_markers(configs: list[ConfigVersion], slug: str) -> list[Marker]:
    """Each version's moment: made current ("deployed"; "rollback from vN" when the version it
    replaced was newer), or only recorded when it is not known to have ever been current (a
    trial), so the timeline never contradicts the dossier's current config."""
    url = reverse("dossiers:configs", args=[slug])
    deployed = sorted((c for c in configs if c.made_current_at), key=lambda c: c.made_current_at)
    markers = []
    for before, c in zip([None, *deployed], deployed, strict=False):
        title, tone = f"Config v{c.version} deployed", "info"
        if before is not None and before.version > c.version:
            title, tone = (
                f"Config v{c.version} deployed again: rollback from v{before.version}",
                "warn",
            )
        markers.append(
            Marker(kind="deploy", at=c.made_current_at, title=title, detail=c.note,
                   url=f"{url}?b={c.version}", tone=tone)
        )  # fmt: skip
    for c in configs:
        if c.made_current_at is None:
            markers.append(
                Marker(kind="deploy", at=c.created_at,
                       title=f"Config v{c.version} recorded, not made current",
                       detail=c.note, url=f"{url}?b={c.version}")
            )  # fmt: skip
    return markers


def _experiment_markers(experiments: list[Experiment]) -> list[Marker]:
    tones = {"adopted": "ok", "reverted": "bad", "pending": "warn", "inconclusive": "info"}
    return [
        Marker(
            kind="experiment",
            at=midnight(e.run_on),
            title=f"Experiment: {e.title}",
            detail=f"{e.variable_key}: {e.value_from} → {e.value_to} ({e.get_verdict_display()})",
            url=reverse("dossiers:dossier", args=[e.service.slug]) + f"#experiment-{e.pk}",
            tone=tones.get(e.verdict, "info"),
        )
        for e in experiments
    ]


def _by(user, credential: str) -> str:
    """Who made a write: the API credential, else the person."""
    if credential:
        return f"by {credential}"
    return f"by {user.get_username()}" if user is not None else ""


def _baseline_markers(baselines: list[Baseline], slug: str) -> list[Marker]:
    """One marker a promotion. Runs promoted together (one `promotion_batch`: the repeats of
    an `import_loadtest --baseline`) are one reference set and one marker: each of them was
    current only until the next one was promoted, so "made current" five times would not be
    what happened."""
    promotions: dict[object, list[Baseline]] = {}
    for b in baselines:
        run = source_run(b)
        batch = run.promotion_batch if run is not None else ""
        promotions.setdefault(batch or ("alone", b.pk), []).append(b)
    markers = []
    for members in promotions.values():
        newest = max(members, key=lambda b: (b.promoted_at, b.pk))
        if len(members) == 1:
            title = f"Baseline “{newest.label}” made current"
        else:
            named = ", ".join(f"“{label}”" for label in sorted({b.label for b in members}))
            title = f"{len(members)} runs promoted together as one baseline set: {named}"
        markers.append(
            Marker(
                kind="baseline",
                at=newest.promoted_at,
                title=title,
                detail=_by(newest.promoted_by, newest.promoted_via)
                + "".join(_lint_override_text(b) for b in members),
                url=reverse("dossiers:baseline", args=[slug, newest.pk]),
            )
        )
    return markers


def _lint_override_text(baseline: Baseline) -> str:
    """A promotion that overrode refusing lint findings says so, with its reason."""
    run = source_run(baseline)
    override = run.lint_override if run is not None else None
    if not override:
        return ""
    return (
        f"; promoted despite lint findings ({', '.join(override.get('checks', []))}): "
        f"{override.get('reason', '')}"
    )


def _gate_markers(runs: list[GateRun]) -> list[Marker]:
    tones = {"pass": "ok", "regression": "bad", "refused": "warn"}
    markers = []
    for run in runs:
        by = _by(run.created_by, run.ci_token.credential_label if run.ci_token else "")
        markers.append(
            Marker(
                kind="gate",
                at=run.created_at,
                title=f"Release gate: {run.get_verdict_display()}",
                detail=f"candidate {run.candidate.label}" + (f", {by}" if by else ""),
                url=_link("loadtests:gate_run", run.service.slug, run.pk),
                tone=tones.get(run.verdict, "info"),
            )
        )
    return markers


def _change_markers(changes: list[HistoryChange], slug: str) -> list[Marker]:
    """Steps in the load-test history: worse is "bad", better is "ok"."""
    markers = []
    for change in changes:
        lower_is_better = change.unit != "tok/s"
        worse = change.relative > 0 if lower_is_better else change.relative < 0
        markers.append(
            Marker(
                kind="change",
                at=change.at,
                title=change.title,
                detail=change.detail,
                url=_link("loadtests:detail", slug, change.run.pk),
                tone="bad" if worse else "ok",
            )
        )
    return markers


def _live_change_markers(changes: list[LiveChange]) -> list[Marker]:
    """Steps in the daily live latency: slower is "bad", faster is "ok"."""
    return [
        Marker(
            kind="change",
            at=c.at,
            title=c.title,
            detail=c.detail,
            url=c.url,
            tone="bad" if c.relative > 0 else "ok",
        )
        for c in changes
    ]


def time_markers(*, service: Service, start: datetime, end: datetime) -> list[Marker]:
    """Alerts firing/resolving, deploys and experiments in [start, end], oldest first.

    Three queries. At most MAX_MARKERS (the newest), so a flapping rule cannot bury a chart.
    """
    events = [
        e for e in alert_history_for_service(service, start, end) if e.kind in CHART_ALERT_KINDS
    ][-MAX_MARKERS:]
    # Every version made by `end` (a service has a handful): a deploy in the range may be a
    # rollback from one made before it.
    configs = list(ConfigVersion.objects.filter(service=service, created_at__lte=end))
    experiments = list(
        Experiment.objects.filter(
            service=service, run_on__gte=start.date(), run_on__lte=end.date()
        ).select_related("service")
    )
    deploys = [m for m in _deploy_markers(configs, service.slug) if start <= m.at <= end]
    markers = _alert_markers(events) + deploys + _experiment_markers(experiments)
    return sorted(markers, key=lambda m: m.at)[-MAX_MARKERS:]


def timeline(*, service: Service, limit: int = 50, since: datetime | None = None) -> list[Marker]:
    """The dossier timeline: alert transitions, deploys, experiments, gate runs, baseline
    promotions (with who or which credential promoted) and steps (change points) in the
    load-test history and in the daily live latency, newest first.

    Eight queries, each bounded. `since`: only what happened from then on.
    """
    events = recent_history_for_service(service, timezone.now(), limit, states_only=True)
    configs = list(ConfigVersion.objects.filter(service=service).order_by("-created_at")[:limit])
    experiments = list(Experiment.objects.filter(service=service).select_related("service")[:limit])
    runs = list(
        GateRun.objects.filter(service=service)
        .select_related("candidate", "service", "ci_token", "created_by")
        .order_by("-created_at")[:limit]
    )
    promotions = list(
        Baseline.objects.filter(service=service, promoted_at__isnull=False)
        .select_related("promoted_by", "source_load_test")
        .order_by("-promoted_at")[:limit]
    )
    markers = (
        _alert_markers(events)
        + _deploy_markers(configs, service.slug)
        + _experiment_markers(experiments)
        + _gate_markers(runs)
        + _change_markers(history_changes(service=service), service.slug)
        + _live_change_markers(live_changes(service=service))
        + _baseline_markers(promotions, service.slug)
    )
    if since is not None:
        markers = [m for m in markers if m.at >= since]
    newest_first = sorted(markers, key=lambda m: m.at, reverse=True)
    return _passes_together(newest_first, service.slug)[:limit]


def _passes_together(markers: list[Marker], slug: str) -> list[Marker]:
    """Gate passes with nothing else between them are one entry: a nightly job passes every
    night, and eleven "Release gate: pass" lines would push the deploy, the regression and the
    step they sit between off the page. A regression, or anything else that happened, ends the
    streak, so what a pass came before or after stays readable. `markers` newest first."""
    out: list[Marker] = []
    streak: list[Marker] = []

    def close_streak() -> None:
        if len(streak) > 1:
            newest, oldest = streak[0], streak[-1]
            out.append(
                Marker(
                    kind="gate",
                    at=newest.at,
                    title=f"Release gate: {len(streak)} runs passed",
                    detail=(
                        f"from {oldest.at.astimezone(UTC):%Y-%m-%d %H:%M} "
                        f"to {newest.at.astimezone(UTC):%Y-%m-%d %H:%M} UTC; "
                        f"the newest: {newest.detail}"
                    ),
                    url=_link("loadtests:gate_runs", slug),
                    tone="ok",
                    count=len(streak),
                )
            )
        else:
            out.extend(streak)
        streak.clear()

    for marker in markers:
        if marker.kind == "gate" and marker.tone == "ok":
            streak.append(marker)
            continue
        close_streak()
        out.append(marker)
    close_streak()
    return out
