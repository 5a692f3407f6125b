"""GPU-Util high while SM active is low: the GPU is busy but its compute is idle."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import register
from alerts.kinds._gpu import _GpuBelow, _rule
from alerts.promql import Metrics, duration, number
from alerts.sources import ServiceWindow
from analysis import diagnosis
from analysis.alerting import Health, Observation
from core.templatetags.display import percent

if TYPE_CHECKING:
    from alerts.models import Rule
    from dossiers.models import Service


# The thresholds are the diagnosis rules' (analysis.diagnosis), so a live diagnosis and an
# alert never disagree about the same window.
@register
class SmGap(_GpuBelow):
    name = "sm_gap"
    order = 30
    label = "SM active / GPU-Util below (ratio, 0.5 = 50%) while the GPU looks busy"
    description = (
        "SM active far below GPU-Util: kernels run but leave the SMs idle (memory- or"
        " launch-bound); GPU-Util alone would call the GPU busy."
    )

    def default_specs(self, service: Service) -> list[dict]:
        ratio = diagnosis.SM_TO_GPU_UTIL_RATIO
        return [
            _rule("SM active far below GPU-Util", ratio, window_s=900, for_s=1800, severity="info")
        ]

    def observe_gpu(self, w: ServiceWindow) -> Observation:
        if w.sm_active is None:
            return Observation(
                Health.NO_DATA, reason="no SM active (DCGM profiling or NVML GPM) from these hosts"
            )
        ratio = w.sm_active / w.gpu_util if w.gpu_util else 1.0
        return Observation(
            Health.OK,
            value=ratio,
            count=w.gpu_samples,
            gate=w.gpu_util >= diagnosis.HIGH_GPU_UTIL,
            reason=f"SM active {percent(w.sm_active)} vs GPU-Util {percent(w.gpu_util)}",
        )

    def promql(self, rule: Rule, m: Metrics) -> str:
        w = duration(rule.window_s)
        util, sm = m.gpu_mean("util", w), m.gpu_mean("sm_active", w)
        busy = f"{util} >= {number(diagnosis.HIGH_GPU_UTIL)}"
        return f"({sm} / ({util}) < {number(rule.threshold)}) and on() ({busy})"
