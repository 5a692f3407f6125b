"""What one evaluation reads for its claimed rules: set-based, all their services at once, each
read in a savepoint of its own so one that fails marks only the rules needing it."""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction

from alerts import rules, slo, sources
from alerts.models import Rule
from dossiers.models import Service, Slo

log = logging.getLogger(__name__)


def evaluation_lag() -> timedelta:
    return timedelta(seconds=getattr(settings, "PERFHUB_ALERTS_EVALUATION_LAG_S", 120))


def no_data_lookback() -> timedelta:
    return timedelta(seconds=getattr(settings, "PERFHUB_ALERTS_NO_DATA_LOOKBACK_S", 3600))


def read_inputs(claimed: list[Rule], t: datetime) -> rules.Inputs:
    end = t - evaluation_lag()
    lookback = no_data_lookback()
    inputs = rules.Inputs(window_end=end, no_data_lookback_s=lookback.total_seconds())
    by_window: dict[int, set[int]] = defaultdict(set)
    metrics_by_window: dict[int, set[str]] = defaultdict(set)
    gpu_windows: set[int] = set()
    no_data_services: set[int] = set()
    slo_windows: set[int] = set()
    slo_services: dict[int, Service] = {}
    cost_services: dict[int, Service] = {}
    for rule in claimed:
        kind = rule.kind_spec
        if kind is None:
            continue  # evaluation reports the unknown kind as rule health "error"
        if kind.per_host:
            no_data_services.add(rule.service_id)
            continue
        if kind.reads_slo:
            slo_windows |= set(kind.windows(rule))
            slo_services[rule.service_id] = rule.service
            continue
        by_window[rule.window_s].add(rule.service_id)
        if kind.latency_metric:
            metrics_by_window[rule.window_s].add(kind.latency_metric)
        if kind.reads_gpu:
            gpu_windows.add(rule.window_s)
        if kind.reads_baseline_cost:
            cost_services[rule.service_id] = rule.service
    # "No data" rules read each host's last minute over the lookback: the same rows as a
    # window of that length (the cost rules' hour by default), so one query reads both.
    seen_window = int(lookback.total_seconds()) if no_data_services else None
    if seen_window is not None:
        by_window[seen_window] |= no_data_services
    # Each read in a savepoint of its own: one that fails marks only the rules needing it.
    for window_s, service_ids in by_window.items():
        start = end - timedelta(seconds=window_s)
        keys = [f"window:{window_s}"] + (["last_data"] if window_s == seen_window else [])
        _guarded_read(
            inputs,
            keys,
            lambda start=start, window_s=window_s, service_ids=service_ids: inputs.windows.update(
                {
                    window_s: sources.service_windows(
                        service_ids,
                        start,
                        end,
                        metrics=metrics_by_window[window_s],
                        gpu=False,  # read below, every window length at once
                        last_seen=window_s == seen_window,
                    )
                }
            ),
        )
    gpu_read = {w: inputs.windows[w] for w in sorted(gpu_windows) if w in inputs.windows}
    if gpu_read:
        _guarded_read(
            inputs,
            [f"gpu:{w}" for w in gpu_read],
            lambda: sources.add_gpu(gpu_read, end),
        )
    if seen_window is not None:
        seen = inputs.windows.get(seen_window, {})
        inputs.last_data = {sid: seen[sid].hosts_seen for sid in no_data_services if sid in seen}
    if slo_services:
        _guarded_read(
            inputs,
            [f"slo:{w}" for w in sorted(slo_windows)] + ["slos"],
            lambda: _read_slo_inputs(inputs, slo_services, slo_windows, end),
        )
    if cost_services:
        _guarded_read(
            inputs,
            ["baseline_costs"],
            lambda: setattr(
                inputs, "baseline_costs", sources.baseline_costs(cost_services.values())
            ),
        )
    _guarded_read(
        inputs,
        ["source_errors"],
        lambda: setattr(
            inputs, "source_errors", sources.source_errors({r.service_id for r in claimed})
        ),
    )
    return inputs


def _read_slo_inputs(
    inputs: rules.Inputs, services: dict[int, Service], windows: set[int], end: datetime
) -> None:
    saved: dict[int, list[Slo]] = defaultdict(list)
    for o in Slo.objects.filter(service_id__in=list(services)):
        saved[o.service_id].append(o)
    inputs.slos = {sid: s.slo_objects(saved[sid]) for sid, s in services.items()}
    ids = [sid for sid, objs in inputs.slos.items() if objs]
    inputs.slo_windows = slo.read_windows(ids, end, windows, inputs.slos) if ids else {}


def _guarded_read(inputs: rules.Inputs, keys: list[str], read) -> None:
    try:
        with transaction.atomic():
            read()
    except Exception as exc:
        log.exception("evaluation read %s failed", keys[0])
        for key in keys:
            inputs.failures[key] = f"{type(exc).__name__}: {exc}"[:300]
