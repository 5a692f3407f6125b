"""A service's load-test history per workload shape, and where its metrics stepped.

Runs are grouped by workload fingerprint (the gate's rule: another workload is another series), put
in measurement order, and each tracked metric's series goes through
`analysis.changepoints.change_points`. Each step names the first run at the new level and the
config version in force when it was measured ("TTFT P50 stepped +12% at run #41, config v7").
Two queries (runs, config versions), whatever the history's length.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from analysis import changepoints, gate
from dossiers.models import ConfigVersion, Service
from loadtests.gate import shape_of, shape_text, workload_differences
from loadtests.models import LoadTest

HISTORY_LIMIT = 500  # newest runs read per service
TRACKED = (
    ("ttft_p50_ms", "TTFT P50", "ms"),
    ("tpot_p50_ms", "TPOT P50", "ms"),
    ("e2e_p50_ms", "E2E P50", "ms"),
    ("e2e_p99_ms", "E2E P99", "ms"),
    ("output_tps", "output tokens/s", "tok/s"),
)


@dataclass(frozen=True)
class HistoryChange:
    metric: str
    label: str
    unit: str
    run: LoadTest  # the first run at the new level
    position: int  # 1-based place of that run in its shape's history
    runs: int  # runs in that history
    before: float
    after: float
    relative: float
    config_version: int | None  # the config in force when `run` was measured
    shape: str

    @property
    def at(self) -> datetime:
        return self.run.measured_at

    @property
    def title(self) -> str:
        text = f"{self.label} stepped {self.relative:+.0%} at run #{self.run.pk}"
        if self.config_version is not None:
            text += f", config v{self.config_version}"
        return text

    @property
    def detail(self) -> str:
        return (
            f"{self.before:,.1f} -> {self.after:,.1f} {self.unit}; run {self.position} of "
            f"{self.runs} at {self.shape}"
        )


def history_changes(*, service: Service, limit: int = HISTORY_LIMIT) -> list[HistoryChange]:
    """Steps in every tracked metric of every shape's run history, oldest first."""
    runs = list(
        LoadTest.objects.filter(service=service, measured_at__isnull=False)
        .order_by("-measured_at", "-pk")
        .only(
            "pk",
            "service_id",
            "label",
            "measured_at",
            "concurrency",
            "request_rate",
            "request_rate_inf",
            "prompt_tokens_mean",
            "output_tokens_mean",
            "prompt_tokens_std",
            "output_tokens_std",
            "fingerprint",
            *(metric for metric, _, _ in TRACKED),
        )[:limit]
    )
    runs.reverse()
    configs = list(
        ConfigVersion.objects.filter(service=service)
        .order_by("created_at")
        .values_list("created_at", "version")
    )
    changes: list[HistoryChange] = []
    for shape, series in _by_shape(runs):
        for metric, label, unit in TRACKED:
            points = [run for run in series if (getattr(run, metric) or 0) > 0]
            for step in changepoints.change_points([getattr(r, metric) for r in points]):
                run = points[step.index]
                changes.append(
                    HistoryChange(
                        metric=metric,
                        label=label,
                        unit=unit,
                        run=run,
                        position=series.index(run) + 1,
                        runs=len(series),
                        before=step.before,
                        after=step.after,
                        relative=step.relative,
                        config_version=_config_at(configs, run.measured_at),
                        shape=shape_text(shape),
                    )
                )
    return sorted(changes, key=lambda c: (c.at, c.metric))


def _by_shape(runs: list[LoadTest]) -> list[tuple[gate.WorkloadShape, list[LoadTest]]]:
    """Runs grouped by workload: each joins the first group whose first run's fingerprint it
    is compatible with (analysis.fingerprint)."""
    groups: list[tuple[gate.WorkloadShape, list[LoadTest]]] = []
    for run in runs:
        for _, members in groups:
            if not workload_differences(members[0], run):
                members.append(run)
                break
        else:
            groups.append((shape_of(run), [run]))
    return groups


def _config_at(configs: list[tuple[datetime, int]], when: datetime) -> int | None:
    version = None
    for created_at, number in configs:
        if created_at <= when:
            version = number
    return version
