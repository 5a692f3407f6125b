"""A service's alert rules as a Prometheus rules file, for teams that alert in Prometheus.

The expressions read the engine's and dcgm-exporter's own metric names, taken from the same
mapping tables PerfHub scrapes with (`collectors.exposition.engines`, `.dcgm`): P99 from
`histogram_quantile` over `rate(..._bucket[window])` summed by `le` (buckets merged, never
percentiles averaged), GPU waiting, SM active far below GPU-Util, KV cache near full, no data.
What Prometheus cannot say the same way is left out and listed in the file's header: cost and
margin need prices and a baseline; the resolve threshold (hysteresis) has no Prometheus
equivalent, so an exported alert resolves at its firing threshold.
"""

from __future__ import annotations

import re

import yaml
from django.conf import settings

from alerts import rules as rule_kinds
from alerts.models import Rule
from collectors.exposition import dcgm, engines
from collectors.exposition.promql import parse_selector
from dossiers.models import Service

# The PerfHub latency kind -> the canonical histogram an engine exposes for it.
HISTOGRAM = {Rule.Kind.P99_E2E: "e2e_seconds", Rule.Kind.P99_TTFT: "ttft_seconds",
             Rule.Kind.P99_TPOT: "itl_seconds"}  # fmt: skip
DCGM_UTIL = next(name for name, (key, _) in dcgm.FIELDS.items() if key == "util")
DCGM_SM_ACTIVE = next(name for name, (key, _) in dcgm.FIELDS.items() if key == "sm_active")
UTIL_FACTOR = dcgm.FIELDS[DCGM_UTIL][1]  # percent -> ratio


class NotExportable(Exception):
    """This rule has no Prometheus equivalent for this engine; the reason says why."""


def _mapping(engine: str, canonical: str) -> engines.Rule:
    if engine not in engines.ENGINES:
        raise NotExportable(f"no metric mapping for engine {engine!r}")
    for rule in engines.rules_for(engine):
        if rule.canonical == canonical and not rule.where:
            return rule
    raise NotExportable(f"{engine} exposes no {canonical}")


def _selector(matchers: str, extra: tuple[tuple[str, str], ...] = ()) -> str:
    parts = [m for m in [matchers.strip().strip("{}").strip()] if m]
    parts += [f'{k}="{v}"' for k, v in extra]
    return "{" + ", ".join(parts) + "}" if parts else ""


def duration(seconds: int) -> str:
    """Prometheus's duration: 300 -> "5m", 90 -> "90s"."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600}h"
    if seconds % 60 == 0:
        return f"{seconds // 60}m"
    return f"{seconds}s"


def _number(value: float) -> str:
    return f"{value:g}"


def expression(rule: Rule, engine: str, engine_sel: str, dcgm_sel: str) -> str:
    """The PromQL that is non-empty exactly when the rule's condition holds."""
    w = duration(rule.window_s)
    kind = rule.kind
    if kind in HISTOGRAM:
        m = _mapping(engine, HISTOGRAM[kind])
        sel = _selector(engine_sel, m.where)
        to_ms = 1000.0 * m.scale
        p99 = f"histogram_quantile(0.99, sum by (le) (rate({m.names[0]}_bucket{sel}[{w}])))"
        enough = f"sum(increase({m.names[0]}_count{sel}[{w}])) >= {rule.min_requests}"
        return f"({p99} * {_number(to_ms)} > {_number(rule.threshold)}) and on() ({enough})"
    if kind == Rule.Kind.KV_CACHE:
        m = _mapping(engine, "kv_cache_usage")
        sel = _selector(engine_sel, m.where)
        return f"max(avg_over_time({m.names[0]}{sel}[{w}])) > {_number(rule.threshold)}"
    util = f"avg(avg_over_time({DCGM_UTIL}{_selector(dcgm_sel)}[{w}])) * {_number(UTIL_FACTOR)}"
    if kind == Rule.Kind.GPU_WAITING:
        m = _mapping(engine, "requests_waiting")
        waiting = f"sum(avg_over_time({m.names[0]}{_selector(engine_sel, m.where)}[{w}]))"
        queued = f"{waiting} >= {_number(rule_kinds.GPU_WAITING_MIN_QUEUE)}"
        return f"({util} < {_number(rule.threshold)}) and on() ({queued})"
    if kind == Rule.Kind.SM_GAP:
        sm = f"avg(avg_over_time({DCGM_SM_ACTIVE}{_selector(dcgm_sel)}[{w}]))"
        busy = f"{util} >= {_number(rule_kinds.SM_GAP_MIN_UTIL)}"
        return f"({sm} / ({util}) < {_number(rule.threshold)}) and on() ({busy})"
    if kind == Rule.Kind.NO_DATA:
        m = _mapping(engine, "requests_running")
        silent = duration(int(rule.threshold))
        return f"absent_over_time({m.names[0]}{_selector(engine_sel, m.where)}[{silent}])"
    raise NotExportable("needs prices or a baseline PerfHub keeps (cost and margin rules)")


def alert_name(rule: Rule) -> str:
    words = re.sub(r"[^A-Za-z0-9]+", " ", f"{rule.service.slug} {rule.name}").split()
    return "".join(w[:1].upper() + w[1:] for w in words)


def rules_document(
    service: Service, *, engine_selector: str = "", dcgm_selector: str = ""
) -> tuple[dict, list[str]]:
    """({"groups": [...]}, reasons for the rules left out)."""
    alerts, skipped = [], []
    for rule in service.alert_rules.filter(enabled=True).select_related("service__team"):
        try:
            expr = expression(rule, service.engine, engine_selector, dcgm_selector)
        except NotExportable as exc:
            skipped.append(f"{rule.name}: {exc}")
            continue
        labels = {**rule_kinds.base_labels(rule), "perfhub_rule": rule.name}
        labels.pop("alertname", None)  # Prometheus sets it from `alert`
        alert = {"alert": alert_name(rule), "expr": expr}
        if rule.for_s:
            alert["for"] = duration(rule.for_s)
        if rule.keep_firing_for_s:
            alert["keep_firing_for"] = duration(rule.keep_firing_for_s)
        alert["labels"] = labels
        alert["annotations"] = {
            "summary": f"{service.name}: {rule.name} ({rule.direction} {rule.threshold_display})",
            "dossier_url": settings.SITE_URL.rstrip("/") + service.get_absolute_url(),
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
    document, skipped = rules_document(
        service, engine_selector=engine_selector, dcgm_selector=dcgm_selector
    )
    header = [
        f"# Prometheus alerting rules for {service.name} ({service.slug}), exported by PerfHub.",
        f"# Engine metrics: {service.engine}; GPU metrics: dcgm-exporter.",
        "# Alerts resolve at their firing threshold (Prometheus has no resolve threshold).",
    ]
    header += [f"# Not exported: {reason}" for reason in skipped]
    return "\n".join(header) + "\n" + yaml.safe_dump(document, sort_keys=False, width=1000)
