"""What the GPU diagnosis kinds (gpu_waiting, sm_gap) share: a 0-1 figure below a threshold,
read from the hosts' GPU samples. A private module (`_`): discovery skips it, it registers no
kind."""

from __future__ import annotations

from typing import TYPE_CHECKING

from alerts.kinds import RuleKind, default_rule
from alerts.sources import ServiceWindow
from analysis.alerting import Direction, Health, Observation

if TYPE_CHECKING:
    from alerts.models import Rule
    from alerts.rules import Inputs


def _rule(name: str, threshold: float, **timing) -> dict:
    """A default rule at a diagnosis threshold (analysis.diagnosis), resolving 0.1 above it."""
    return default_rule(name, threshold, round(threshold + 0.1, 3), **timing)


class _GpuBelow(RuleKind):
    unit = "ratio"
    direction = Direction.BELOW
    reads_gpu = True

    def observe_window(self, rule: Rule, w: ServiceWindow, inputs: Inputs) -> Observation:
        if w.gpu_util is None:
            return Observation(Health.NO_DATA, reason="no GPU utilization from these hosts")
        return self.observe_gpu(w)

    def observe_gpu(self, w: ServiceWindow) -> Observation:
        """The observation of a window with GPU utilization."""
        raise NotImplementedError
