"""The SLO burn-rate rule in PromQL: each SLO's bad share over the engine's own series, burn
rate over the rule's long and short windows, one alert per SLO (label `slo`).

A latency objective is read from the engine histogram's bucket at the threshold (`le`), so the
threshold must be one of the histogram's edges: between two edges the count is only bounded
(see `analysis.slo`) and Prometheus would have to round it, so such a rule is left out with
the edges around the threshold named. Several thresholds give the largest single bad share
(the certain part of the joint, as PerfHub's own evaluation uses).
"""

from __future__ import annotations

import re

from alerts.promql import Metrics, NotExportable, duration, number
from analysis import readable
from analysis.buckets import BucketCounts
from collectors.models import ServiceMergedRollup
from dossiers.models import Slo

# The engine histogram each latency metric is read from (ITL stands for TPOT, as for P99).
HISTOGRAM = {"e2e": "e2e_seconds", "ttft": "ttft_seconds", "tpot": "itl_seconds"}


def latest_edges(service_id: int, metric: str) -> tuple[float, ...] | None:
    """The bucket edges (seconds) of the newest roll-up holding the metric's histogram."""
    row = (
        ServiceMergedRollup.objects.filter(
            service_id=service_id, **{f"{metric}_buckets__isnull": False}
        )
        .order_by("-start")
        .values_list(f"{metric}_buckets", flat=True)
        .first()
    )
    return BucketCounts.from_dict(row).edges if row else None


def le_matcher(value: float) -> str:
    """A regex for the `le` label of an edge however the exporter printed it ("1", "1.0")."""
    forms = {f"{value:g}", repr(float(value))}
    if float(value).is_integer():
        forms.add(f"{int(value)}")
    return "|".join(sorted(re.escape(f) for f in forms))


def _ms(value: float) -> str:
    # As the pages print a configured figure: "1,000,000 ms", never `:g`'s "1e+06 ms".
    return f"{readable.setting(value)} ms"


def _bad_latency(m: Metrics, metric: str, threshold_ms: float, edges, window: str) -> str:
    t = threshold_ms / 1000.0
    if edges is None:
        raise NotExportable(
            f"no engine histogram of {metric} seen yet, so whether {_ms(threshold_ms)} is a "
            "bucket edge is unknown"
        )
    if not any(abs(e - t) <= 1e-9 * max(1.0, t) for e in edges):
        below = [e for e in edges if e < t]
        above = [e for e in edges if e > t]
        around = ", ".join(_ms(e * 1000) for e in (below[-1:] + above[:1]))
        raise NotExportable(
            f"{metric} threshold {_ms(threshold_ms)} is not a bucket edge (nearest: {around});"
            " Prometheus could only round it"
        )
    s = m.engine_series(HISTOGRAM[metric])
    le = le_matcher(t / s.scale)
    # A backquoted (raw) string: the regex's backslashes stay as they are.
    good = f"sum(rate({s.vector('_bucket', f'le=~`{le}`')}[{window}]))"
    total = f"sum(rate({s.vector('_count')}[{window}]))"
    return f"(1 - {good} / {total})"


def _bad_share(slo: Slo, m: Metrics, window: str, edges: dict) -> str:
    if slo.kind == Slo.Kind.AVAILABILITY:
        errors = m.counter_rate("request_errors", window)
        finished = m.counter_rate("requests_finished", window)
        return f"({errors} / ({finished} + {errors}))"
    parts = [
        (metric, _bad_latency(m, metric, t, edges[metric], window))
        for metric, t in slo.thresholds_ms.items()
    ]
    if len(parts) == 1:
        return parts[0][1]
    tagged = " or ".join(f'label_replace({e}, "objective", "{k}", "", "")' for k, e in parts)
    return f"max({tagged})"


def _requests(slo: Slo, m: Metrics, window: str) -> str:
    if slo.kind == Slo.Kind.AVAILABILITY:
        return m.counter_increase("requests_finished", window)
    metric = next(iter(slo.thresholds_ms))
    s = m.engine_series(HISTOGRAM[metric])
    return f"sum(increase({s.vector('_count')}[{window}]))"


def burn_expression(rule, m: Metrics, windows: tuple[int, int]) -> str:
    """Non-empty, with one series per burning SLO (label `slo`), exactly when the rule fires."""
    service = rule.service
    slos = service.slo_objects()
    if not slos:
        raise NotExportable("the service has no SLO")
    # PromQL exists for the built-in kinds only; another kind counts from roll-ups alone.
    other = [o for o in slos if o.kind not in (Slo.Kind.LATENCY, Slo.Kind.AVAILABILITY)]
    if other:
        raise NotExportable(
            f"SLO {other[0].name!r} is of kind {other[0].kind!r}, which has no PromQL form "
            "(only latency and availability SLOs have one)"
        )
    edges = {
        metric: latest_edges(service.pk, metric)
        for metric in {k for o in slos for k in o.thresholds_ms}
    }
    long_w, short_w = (duration(s) for s in windows)
    factor = number(rule.threshold)
    per_slo = []
    for o in slos:
        allowed = number(round(1.0 - o.target, 12))
        burn_long = f"{_bad_share(o, m, long_w, edges)} / {allowed}"
        burn_short = f"{_bad_share(o, m, short_w, edges)} / {allowed}"
        cond = f"({burn_long} >= {factor}) and on() ({burn_short} >= {factor})"
        if rule.min_requests:
            cond += f" and on() ({_requests(o, m, long_w)} >= {rule.min_requests})"
        per_slo.append(f'label_replace({cond}, "slo", "{o.key}", "", "")')
    return " or ".join(per_slo)
