"""The rules every service starts with: each registered kind's defaults for the service."""

from __future__ import annotations

from alerts import kinds
from alerts.models import Rule
from dossiers.models import Service


def default_rule_specs(service: Service) -> list[dict]:
    """The rules every service starts with: each registered kind's defaults for this service
    (from its SLOs, price and the usual GPU pitfalls)."""
    return [
        {"kind": kind.name, **spec}
        for kind in kinds.ordered()
        for spec in kind.default_specs(service)
    ]


def ensure_default_rules(service: Service) -> list[Rule]:
    """Create the default rules the service lacks (by name); returns the ones created."""
    existing = set(service.alert_rules.values_list("name", flat=True))
    new = [
        Rule(service=service, is_default=True, **spec)
        for spec in default_rule_specs(service)
        if spec["name"] not in existing
    ]
    Rule.objects.bulk_create(new, ignore_conflicts=True)
    return new


def ensure_defaults_for_new_services() -> None:
    """Services with no rule at all (new ones) get the defaults. Disable a rule to mute it."""
    for service in Service.objects.filter(alert_rules__isnull=True).select_related("team"):
        ensure_default_rules(service)
