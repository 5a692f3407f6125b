"""What each rule kind observes in a window: a value, its health and the alert's identity.

`observe` turns the batched reads of `alerts.sources` into `Observation`s for the pure state
machine in `analysis.alerting`. One observation per identity: the service, or for "no data"
rules each host of the service and the service itself.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime

from alerts import kinds
from alerts.models import Rule
from alerts.sources import HostSeen, ServiceWindow
from analysis.alerting import Health, Observation
from analysis.slo import SloWindow


@dataclass
class Inputs:
    """Everything one evaluation read, for all rules (see `alerts.evaluation.evaluate_all`)."""

    windows: dict[int, dict[int, ServiceWindow]] = field(default_factory=dict)  # window_s -> sid
    last_data: dict[int, list[HostSeen]] = field(default_factory=dict)
    baseline_costs: dict[int, float | None] = field(default_factory=dict)
    window_end: datetime | None = None
    no_data_lookback_s: float = 3600.0
    # Reads that failed (input key -> reason): only the rules needing them report an error.
    failures: dict[str, str] = field(default_factory=dict)
    source_errors: dict[int, str] = field(default_factory=dict)  # service id -> why its feed fails
    # SLO burn rules: window_s -> service id -> counts, and each service's SLOs.
    slo_windows: dict[int, dict[int, SloWindow]] = field(default_factory=dict)
    slos: dict[int, list] = field(default_factory=dict)


def input_key(rule: Rule) -> str:
    """Which batched read a rule depends on (see `Inputs.failures`)."""
    spec = rule.kind_spec
    if spec is not None and spec.per_host:
        return "last_data"
    if spec is not None and spec.reads_slo:
        return "slo:" + str(rule.window_s)
    return f"window:{rule.window_s}"


def base_labels(rule: Rule) -> dict[str, str]:
    service = rule.service
    labels = {
        "alertname": rule.name,
        "service": service.slug,
        "team": service.team.slug,
        "severity": rule.severity,
        "rule_kind": rule.kind,
    }
    labels.update(rule.labels or {})
    return labels


def fingerprint(rule_id: int, identity: dict[str, str]) -> str:
    """Stable id of an alert: the rule plus its identity labels (not severity or free labels)."""
    raw = json.dumps([rule_id, sorted(identity.items())], separators=(",", ":"))
    return hashlib.sha256(raw.encode()).hexdigest()[:16]


def observe(rule: Rule, inputs: Inputs) -> list[tuple[dict[str, str], Observation]]:
    """(identity labels, observation) pairs for `rule` from the batched inputs (its kind's)."""
    failure = inputs.failures.get(input_key(rule))
    spec = rule.kind_spec
    if spec is not None and spec.reads_baseline_cost and not failure:
        failure = inputs.failures.get("baseline_costs")
    if spec is not None and spec.reads_gpu and not failure:
        failure = inputs.failures.get(f"gpu:{rule.window_s}")
    if failure:
        reason = f"could not read its data: {failure}"
        return [({"service": rule.service.slug}, Observation(Health.ERROR, reason=reason))]
    return kinds.for_rule(rule.kind).observe(rule, inputs)


def silent_for_lookback(inputs: Inputs) -> Observation:
    """A live no-data alert whose host fell out of the lookback is still silent."""
    return Observation(
        Health.OK,
        value=inputs.no_data_lookback_s,
        reason=f"no data for at least {inputs.no_data_lookback_s:g} s",
    )
