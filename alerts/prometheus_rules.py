"""A service's alert rules as a Prometheus rules file, for teams that alert in Prometheus.

Each rule kind writes its own expression (`RuleKind.promql` in `alerts.kinds`) over the
engine's and dcgm-exporter's metric names from collectors' mapping tables (`alerts.promql`).
What Prometheus cannot say the same way is left out and listed in the file's header (a cost
rule without a current baseline, a margin rule without a price, an engine that counts no
tokens). Cost and margin carry the service's prices, GPU count and baseline cost as numbers as
they are at export. The resolve threshold (hysteresis) has no Prometheus equivalent, so an
exported alert resolves at its firing threshold.
"""

from __future__ import annotations

import re

import yaml

from alerts import rules as rule_labels
from alerts.models import Rule
from alerts.promql import Metrics, NotExportable, duration
from collectors.exposition.promql import parse_selector
from core.links import site_url
from dossiers.models import Service


def alert_name(rule: Rule) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", " ", f"{rule.service.slug} {rule.name}").split()
    return "".join(w[:1].upper() + w[1:] for w in words)


def rules_document(service: Service, metrics: Metrics) -> tuple[dict, list[str]]:
    """({"groups": [...]}, reasons for the rules left out)."""
    alerts, skipped = [], []
    for rule in service.alert_rules.filter(enabled=True).select_related("service__team"):
        spec = rule.kind_spec
        try:
            if spec is None:
                raise NotExportable(f"unknown rule kind {rule.kind!r}")
            expr = spec.promql(rule, metrics)
        except NotExportable as exc:
            skipped.append(f"{rule.name}: {exc}")
            continue
        labels = {**rule_labels.base_labels(rule), "perfhub_rule": rule.name}
        labels.pop("alertname", None)  # Prometheus sets it from `alert`
        alert: dict = {"alert": alert_name(rule), "expr": expr}
        if rule.for_s:
            alert["for"] = duration(rule.for_s)
        if rule.keep_firing_for_s:
            alert["keep_firing_for"] = duration(rule.keep_firing_for_s)
        alert["labels"] = labels
        alert["annotations"] = {
            "summary": f"{service.name}: {rule.name} ({rule.direction} {rule.threshold_display})",
            "dossier_url": site_url(service.get_absolute_url()),
        }
        alerts.append(alert)
    return {"groups": [{"name": f"perfhub-{service.slug}", "rules": alerts}]}, skipped


def default_selectors(service: Service) -> tuple[str, str]:
    """The label matchers of the service's Prometheus source, when it has one."""
    source = service.prometheus_sources.order_by("pk").first()
    return (source.engine_selector, source.dcgm_selector) if source else ("", "")


def rules_yaml(
    service: Service, *, engine_selector: str | None = None, dcgm_selector: str | None = None
) -> str:
    """The rules file. Selectors default to the service's Prometheus source's; a bad one
    raises ValueError naming it."""
    defaults = default_selectors(service)
    engine_selector = defaults[0] if engine_selector is None else engine_selector
    dcgm_selector = defaults[1] if dcgm_selector is None else dcgm_selector
    for name, value in (("engine selector", engine_selector), ("DCGM selector", dcgm_selector)):
        try:
            parse_selector(value)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    metrics = Metrics(service.engine, engine_selector, dcgm_selector)
    document, skipped = rules_document(service, metrics)
    header = [
        f"# Prometheus alerting rules for {service.name} ({service.slug}), exported by PerfHub.",
        f"# Engine metrics: {service.engine}; GPU metrics: dcgm-exporter.",
        "# Alerts resolve at their firing threshold (Prometheus has no resolve threshold).",
        "# Cost and margin use the GPU-hour price, GPU count, price per Mtok and baseline cost",
        "# as they were at export: export again when they change.",
    ]
    header += [f"# Not exported: {reason}" for reason in skipped]
    return "\n".join(header) + "\n" + yaml.safe_dump(document, sort_keys=False, width=1000)
