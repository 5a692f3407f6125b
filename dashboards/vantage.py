"""Both sides of one run: a load test's client-side figures beside the engine's own over the
run's window, and their difference as a measured layer.

A load generator's TTFT starts when it sends; the engine's when the request reaches the engine
core, after the HTTP server and the tokenizer. Both are true and they differ: the gap is the
time spent in front of the engine ("API server and tokenizer: +748 ms at TTFT P99"), a layer
of its own that a diagnosis rule proposes as the bottleneck when it dominates.

Here because it joins `loadtests` (the run) and `collectors` (the scrapes), which may not
import each other. A run is given its engine side when it is imported (`connect`) and again
on request (`manage.py attach_engine_side`), e.g. after late scrapes arrived.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.db.models.signals import post_save

from collectors.engine_window import engine_window
from dossiers.models import Baseline
from loadtests.engine_side import FIGURES, layers
from loadtests.models import LoadTest

__all__ = ["attach_engine_side", "connect", "engine_side_of", "layers"]

log = logging.getLogger(__name__)


def engine_side_of(run: LoadTest) -> dict:
    """The engine's figures over the run's window as stored on the run (`server_side`), or
    {} when the file gave no time or no scrape of the service overlaps the run."""
    window = run.window()
    if window is None:
        return {}
    ew = engine_window(service=run.service, start=window[0], end=window[1])
    if ew is None:
        return {}
    figures = {}
    for metric, percentiles in ew.latency.items():
        for p in percentiles:
            key = f"{metric}_{p.label}_ms"
            if key in FIGURES and p.count:
                figures[key] = {
                    "value": p.value,
                    "lower": p.lower,
                    "upper": p.upper,
                    "count": p.count,
                    "below_first_edge": p.below_first_edge,
                    "above_last_edge": p.above_last_edge,
                }
    return {
        "source": "engine histograms (server-side, from arrival at the engine)",
        "run_window": [window[0].isoformat(), window[1].isoformat()],
        "covered": [ew.start.isoformat(), ew.end.isoformat()],
        "scrape_windows": ew.windows,
        "finished": ew.finished,
        "errored": ew.errored,
        "aborted": ew.aborted,
        "figures": figures,
    }


def attach_engine_side(run: LoadTest) -> dict:
    """Compute and store the run's engine side (and its baseline's, if promoted)."""
    data = engine_side_of(run)
    if data:
        run.server_side = data
        run.save(update_fields=["server_side"])
        if run.promoted_to_id:
            Baseline.objects.filter(pk=run.promoted_to_id).update(server_side=data)
    return data


def _attach_quietly(run: LoadTest) -> None:
    # After the import committed: a failure here must not turn a stored import into an error.
    try:
        attach_engine_side(run)
    except Exception:
        log.exception("engine side of load test %s not attached", run.pk)


def _on_imported(sender, instance: LoadTest, created: bool, **kwargs) -> None:
    if created and not instance.failed:
        transaction.on_commit(lambda: _attach_quietly(instance))


def connect() -> None:
    """Give every imported run its engine side (DashboardsConfig.ready)."""
    post_save.connect(_on_imported, sender=LoadTest, dispatch_uid="dashboards.vantage")
