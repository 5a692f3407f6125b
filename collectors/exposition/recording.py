"""Recording rules that sum every host's series per service, and reading them back.

For fleets whose raw series stay in the team's Prometheus-compatible store (Prometheus, Thanos,
Mimir, VictoriaMetrics): the store evaluates these rules, PerfHub's aggregated source reads only
the recorded series (`perfhub_service:<metric>:<op>`), one query per service whatever the host
count. Imports no Django.

Counters and histograms are recorded as their increase over one rule interval, summed by the
service label (and `le`, and the labels the mapping tables filter on):

    (x - x offset 1m) >= 0 or x

which is PerfHub's own window, not `increase()`: the difference of the latest samples one
interval apart (consecutive evaluations add up exactly, nothing extrapolated), a series that
went down restarted so its new value is the increase, and a series new in the interval counts
from zero. Summing per series before `sum by` keeps host restarts from reading as a fleet-wide
reset. Renamed metrics (vLLM's old names) are read per series with `or`: a host on either
version counts once. SGLang's per-rank copies are collapsed by `max` first, as the parser does.
Gauges are summed (or maxed, as the mapping says) by service. GPU fields are summed and counted
by service (blank DCGM sentinels left out).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from collectors.exposition import dcgm, engines
from collectors.exposition.promql import parse_selector, sample_line

PREFIX = "perfhub_service:"
DELTA = "delta"  # increase over one rule interval
_RECORDED = re.compile(r"^perfhub_service:(.+):(delta|sum|max|count)$")


@dataclass
class _Family:
    kind: engines.Kind
    alternates: list[str] = field(default_factory=list)  # older names, per series fallback
    labels: set[str] = field(default_factory=set)  # kept beside the service label
    collapse: tuple[str, ...] = ()
    aggregate: str = "sum"


def _families(source: str) -> dict[tuple[str, str], _Family]:
    """(base metric name, kind) -> how to record it, over every rule of the engine's mapping.
    By kind too: one histogram may be read as two counters (vLLM's `_sum` and `_count`)."""
    families: dict[tuple[str, str], _Family] = {}
    for rule in engines.rules_for(source):
        base, *older = rule.names
        family = families.setdefault((base, rule.kind), _Family(rule.kind))
        family.alternates += [n for n in older if n not in family.alternates]
        family.labels |= {
            name
            for name, _ in (
                *rule.where, *rule.exclude, *rule.only, *rule.prefer, *rule.per, *rule.less
            )
        }  # fmt: skip
        family.labels |= set(rule.batch_labels)
        family.collapse = rule.collapse
        family.aggregate = rule.aggregate
        # The counters that tell a batched request (`Rule.unless_batched`), by the same labels.
        for name in rule.unless_batched:
            guard = families.setdefault((name, "counter"), _Family("counter"))
            guard.labels |= set(rule.batch_labels)
    return families


def _samples(kind: engines.Kind, name: str) -> list[tuple[str, bool]]:
    """(sample name, has `le`) for a family's samples, as the parser reads them."""
    if kind == "histogram":
        return [(name + "_bucket", True), (name + "_sum", False), (name + "_count", False)]
    if kind == "histogram_sum":
        return [(name + "_sum", False)]
    if kind == "histogram_count":
        return [(name + "_count", False)]
    if kind == "counter":  # typed counters gain `_total`; untyped ones keep their name
        return [(name, False), (name + "_total", False)]
    return [(name, False)]


def _by(service_label: str, labels: Iterable[str], le: bool) -> str:
    return ", ".join([service_label, *sorted(labels), *(["le"] if le else [])])


def duration(seconds: int) -> str:
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def engine_rules(source: str, *, interval_s: int, service_label: str = "service") -> list[dict]:
    """The recording rules for one engine's mapping: [{"record": ..., "expr": ...}]."""
    window = duration(interval_s)
    out = []
    for (base, _), family in _families(source).items():

        def series(name: str, offset: bool, collapse: tuple[str, ...] = family.collapse) -> str:
            selected = f"{name} offset {window}" if offset else name
            return f"max without ({', '.join(collapse)}) ({selected})" if collapse else selected

        for sample, le in _samples(family.kind, base):
            names = [sample] + [sample.replace(base, old, 1) for old in family.alternates]
            by = _by(service_label, family.labels, le)
            if family.kind == "gauge":
                inner = " or ".join(series(n, False) for n in names)
                out.append(
                    {
                        "record": f"{PREFIX}{sample}:{family.aggregate}",
                        "expr": f"{family.aggregate} by ({by}) ({inner})",
                    }
                )
                continue
            deltas = " or ".join(
                f"(({series(n, False)} - {series(n, True)}) >= 0 or {series(n, False)})"
                for n in names
            )
            out.append({"record": f"{PREFIX}{sample}:{DELTA}", "expr": f"sum by ({by}) ({deltas})"})
    return out


def dcgm_rules(*, service_label: str = "service") -> list[dict]:
    """GPU fields summed and counted per service (needs the service label on DCGM's series)."""
    out = []
    gpu = f"{service_label}, gpu, UUID, Hostname"
    for name in (*dcgm.FIELDS, *dcgm.MEMORY_FIELDS):
        # Whole GPUs only: a MIG instance's row (GPU_I_ID) reads its slice (`dcgm.is_whole_gpu`),
        # save a device-wide field of a GPU without a row of its own (dcgm-exporter 3.x): the
        # mean of its instances' rows, once per GPU (`dcgm.is_read`).
        valid = f'({name}{{GPU_I_ID=""}} < {dcgm.LOWEST_BLANK})'
        if name in dcgm.DEVICE_FIELDS:
            instances = f'avg by ({gpu}) ({name}{{GPU_I_ID!=""}} < {dcgm.LOWEST_BLANK})'
            valid = f"({valid} or on ({gpu}) {instances})"
        for op in ("sum", "count"):
            out.append(
                {"record": f"{PREFIX}{name}:{op}", "expr": f"{op} by ({service_label}) {valid}"}
            )
    return out


def rules_document(
    sources: Iterable[str], *, interval_s: int, service_label: str = "service"
) -> dict:
    """A Prometheus rules file: one group per engine (and `dcgm`), evaluated every interval."""
    if interval_s < 1:
        raise ValueError("interval: must be at least 1 second")
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", service_label):
        raise ValueError(f"service label: {service_label!r} is not a Prometheus label name")
    groups = []
    for source in sources:
        if source == "dcgm":
            rules = dcgm_rules(service_label=service_label)
        elif source in engines.ENGINES:
            rules = engine_rules(source, interval_s=interval_s, service_label=service_label)
        else:
            raise ValueError(f"engine: {source!r} is not one of {', '.join(engines.sources())}")
        groups.append(
            {"name": f"perfhub-service-{source}", "interval": duration(interval_s), "rules": rules}
        )
    return {"groups": groups}


def recorded_names(source: str) -> tuple[str, ...]:
    """The recorded series an aggregated source reads for `source` (an engine or dcgm)."""
    rules = dcgm_rules() if source == "dcgm" else engine_rules(source, interval_s=60)
    return tuple(rule["record"] for rule in rules)


def recorded_query(source: str, selector: str) -> str:
    """One selector for every recorded series of `source`, narrowed by `selector` (the
    service label's matcher). ValueError names a bad matcher."""
    names = "|".join(re.escape(n) for n in recorded_names(source))
    matchers = [f'__name__=~"{names}"']
    matchers += [f'{n}{op}"{v}"' for n, op, v in parse_selector(selector)]
    return "{" + ", ".join(matchers) + "}"


def delta_expositions(matrix: Iterable[dict]) -> dict[float, str]:
    """Recorded samples (a matrix of raw samples) -> {evaluation time: exposition text}.

    Each text holds, under the engine's own metric names, what the fleet added in the interval
    ending then (and the gauges as of then): parsed and windowed against an empty scrape, it is
    the window a scrape of one host serving the whole fleet would have given.
    """
    lines: dict[float, list[str]] = {}
    for series in matrix:
        metric = dict(series.get("metric") or {})
        m = _RECORDED.match(metric.get("__name__", ""))
        if m is None:
            continue
        metric["__name__"] = m.group(1)
        for ts, value in series.get("values") or []:
            lines.setdefault(float(ts), []).append(sample_line(metric, str(value)))
    return {ts: "\n".join(lines[ts]) + "\n" for ts in sorted(lines)}
