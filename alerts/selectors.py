"""Reads that feed alert pages and, later, the dossier timeline."""

from __future__ import annotations

from datetime import datetime

from django.db.models import Case, IntegerField, QuerySet, Value, When

from alerts.models import AlertEvent, AlertInstance, Notification, Receiver, Rule, Silence
from dossiers.models import Service, Team


def alert_history_for_service(service: Service, start: datetime, end: datetime) -> list[AlertEvent]:
    """Every state change and health change of the service's alerts in [start, end), oldest
    first, with rule and instance loaded (one query): what the dossier timeline draws."""
    return list(
        AlertEvent.objects.filter(service=service, at__gte=start, at__lt=end)
        .select_related("rule", "instance")
        .order_by("at", "id")
    )


_STATE_ORDER = Case(
    When(state="firing", then=Value(0)),
    When(state="pending", then=Value(1)),
    default=Value(2),
    output_field=IntegerField(),
)


# `?state=` on the alert list: each name and the instance states it keeps.
STATE_FILTERS: dict[str, tuple[str, ...]] = {
    "firing": ("firing",),
    "pending": ("pending",),
    "live": ("firing", "pending"),
    "resolved": ("resolved",),
    "inactive": ("inactive",),
}


def alert_list(
    *,
    service: Service | None = None,
    states: tuple[str, ...] | None = None,
    include_ended: bool = True,
    limit: int = 200,
):
    """Alerts, firing first, then pending, then recently ended (one query); one service's
    and some states' only when given."""
    qs: QuerySet[AlertInstance] = AlertInstance.objects.select_related("rule", "service")
    if service is not None:
        qs = qs.filter(service=service)
    if states is not None:
        qs = qs.filter(state__in=states)
    if not include_ended:
        qs = qs.live()
    return list(
        qs.annotate(state_order=_STATE_ORDER).order_by("state_order", "-last_evaluated_at")[:limit]
    )


def alert_detail(pk: int) -> AlertInstance:
    return AlertInstance.objects.select_related("rule", "service__team").get(pk=pk)


def alert_events(instance: AlertInstance) -> list[AlertEvent]:
    return list(instance.events.order_by("at", "id"))


def instance_notifications(instance: AlertInstance, limit: int = 50) -> list[Notification]:
    """Notifications of the instance's group (rule), newest first, with receivers (one query)."""
    return list(
        Notification.objects.filter(rule_id=instance.rule_id)
        .select_related("receiver")
        .order_by("-created_at")[:limit]
    )


def rules_for_list(service: Service | None = None) -> list[Rule]:
    qs = Rule.objects.select_related("service__team")
    if service is not None:
        qs = qs.filter(service=service)
    return list(qs.order_by("service__name", "name"))


def sees_all_secrets(user) -> bool:
    """Staff see every team's receivers and delivery errors; others only their teams'."""
    return bool(user.is_staff or user.is_superuser)


def secret_team_ids(user) -> set[int] | None:
    """The teams whose receiver targets and delivery errors `user` may read; None: all."""
    if sees_all_secrets(user):
        return None
    return set(Team.objects.filter(memberships__user=user).values_list("pk", flat=True))


def receivers_for(user) -> list[Receiver]:
    """The receivers `user` may list: their teams' (staff: all)."""
    qs = Receiver.objects.select_related("team").order_by("team__name", "name")
    teams = secret_team_ids(user)
    return list(qs if teams is None else qs.filter(team_id__in=teams))


def recent_notifications_for(user, limit: int = 100) -> list[Notification]:
    """Recent notifications to the receivers `user` may list, newest first."""
    qs = Notification.objects.select_related("receiver", "service").order_by("-created_at")
    teams = secret_team_ids(user)
    if teams is not None:
        qs = qs.filter(receiver__team_id__in=teams)
    return list(qs[:limit])


def mark_secrets(notifications: list[Notification], user) -> list[Notification]:
    """Set `.secrets_visible` on each: whether `user` reads its receiver's target and error."""
    teams = secret_team_ids(user)
    for n in notifications:
        n.secrets_visible = teams is None or n.receiver.team_id in teams
    return notifications


def silences(now: datetime) -> dict[str, list[Silence]]:
    """Active (and upcoming) silences, and recently expired ones (one query)."""
    out: dict[str, list[Silence]] = {"active": [], "expired": []}
    for s in Silence.objects.select_related("team", "created_by").order_by("-ends_at")[:200]:
        out["active" if s.ends_at > now else "expired"].append(s)
    return out


# A pending alert that never fired ends "inactive" (pending cancelled): the timeline shows that
# end too, or the alert would read as pending forever.
ALERT_STATE_KINDS = (
    AlertEvent.Kind.PENDING,
    AlertEvent.Kind.FIRING,
    AlertEvent.Kind.RESOLVED,
    AlertEvent.Kind.INACTIVE,
)


def recent_history_for_service(
    service: Service, now: datetime, limit: int = 20, *, states_only: bool = False
):
    """The newest events of the service (one query), newest first. `states_only` keeps the
    alert state changes and leaves out rule health (no data, data back), which the dossier
    timeline does not need."""
    events = AlertEvent.objects.filter(service=service, at__lte=now)
    if states_only:
        events = events.filter(kind__in=ALERT_STATE_KINDS)
    return list(events.select_related("rule").order_by("-at", "-id")[:limit])
