"""Requests waiting while the GPU has room: the scheduler, not the GPU, is the limit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import register
from alerts.kinds._gpu import _GpuBelow, _rule
from alerts.promql import Metrics, duration, number
from alerts.sources import ServiceWindow
from analysis import diagnosis
from analysis.alerting import Health, Observation

if TYPE_CHECKING:
    from alerts.models import Rule
    from dossiers.models import Service


# The thresholds are the diagnosis rules' (analysis.diagnosis), so a live diagnosis and an
# alert never disagree about the same window.
@register
class GpuWaiting(_GpuBelow):
    name = "gpu_waiting"
    order = 20
    label = "GPU waiting: utilization below (ratio, 0.5 = 50%) while requests queue"
    description = (
        "GPU-Util low while requests wait in the engine's queue: the GPU waits on the CPU side,"
        " IO or too small batches."
    )

    def default_specs(self, service: Service) -> list[dict]:
        low = diagnosis.LOW_GPU_UTIL
        return [_rule("GPU waiting while requests queue", low, window_s=300, for_s=600)]

    def observe_gpu(self, w: ServiceWindow) -> Observation:
        if w.waiting_mean is None:
            return Observation(Health.NO_DATA, reason="no queue length (requests waiting) scraped")
        return Observation(
            Health.OK,
            value=w.gpu_util,
            count=w.gpu_samples,
            gate=w.waiting_mean >= diagnosis.MIN_REQUESTS_WAITING,
            reason=f"{w.waiting_mean:.1f} requests waiting on average",
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        w = duration(rule.window_s)
        waiting = m.gauge_sum_of_means("requests_waiting", w)
        queued = f"{waiting} >= {number(diagnosis.MIN_REQUESTS_WAITING)}"
        return f"({m.gpu_mean('util', w)} < {number(rule.threshold)}) and on() ({queued})"
