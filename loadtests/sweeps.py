"""Sweeps: a service's load tests that differ only in concurrency or in request rate.

Grouping. Runs join one sweep when they share the tool (format) and the client that measured
them (`configuration.client`: SGLang's bench_serving writes vLLM's format, yet its runs are no
repeats of `vllm bench serve`'s), the swept axis and the value held fixed on the other axis
(a concurrency sweep at unlimited rate; a rate sweep without a concurrency cap), their
workload fingerprints agree with the sweep's first run on everything but the load: prompt and
output length quantiles and means (`analysis.fingerprint`, the gate's own rule), dataset and
ignore_eos where both record them, and so do their serving configurations (model, serving
stack, `vllm bench sweep`'s parameters, `--metadata`: `loadtests.configuration`). A group needs
two settings or more.
When one setting was measured more than once, the newest run stands for it (the others are
listed as replicates): the knee rule takes one point per setting.

The sweet spot is `analysis.knee.sweet_spot` over (setting, output tokens/s, P99 end-to-end),
with the service's end-to-end P99 SLO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from django.db.models.fields.json import KeyTransform

from analysis import fingerprint, knee
from dossiers.models import Service
from loadtests import configuration
from loadtests.gate import fingerprint_of
from loadtests.models import LoadTest

CONCURRENCY = "concurrency"
RATE = "rate"


@dataclass
class Sweep:
    format: str
    axis: str  # CONCURRENCY or RATE
    fixed: object  # the value held fixed on the other axis (rate, or concurrency)
    prompt_tokens: float | None
    output_tokens: float | None
    runs: list[LoadTest] = field(default_factory=list)  # one per setting, by setting
    replicates: list[LoadTest] = field(default_factory=list)
    # What its runs record of the serving configuration (`loadtests.configuration`).
    configuration: dict[str, str] = field(default_factory=dict)
    # Its parameters one by one (`configuration.parameters`): name -> value.
    parameters: dict[str, str] = field(default_factory=dict)
    # The load generator, where the format is written by more than one (`configuration.client`).
    client: str | None = None

    @property
    def key(self) -> int:
        """The sweep's URL handle: the pk of its lowest setting's run."""
        return self.runs[0].pk

    @property
    def axis_label(self) -> str:
        return "concurrency" if self.axis == CONCURRENCY else "request rate (req/s)"

    @property
    def title(self) -> str:
        mix = []
        if self.prompt_tokens is not None:
            mix.append(f"~{self.prompt_tokens:.0f} prompt")
        if self.output_tokens is not None:
            mix.append(f"~{self.output_tokens:.0f} output tokens")
        held = ""
        if self.axis == CONCURRENCY:
            held = "unlimited rate" if self.fixed == math.inf else f"rate {self.fixed:g} req/s"
        elif self.fixed is not None:
            held = f"concurrency {self.fixed}"
        by = f" by {self.client}" if self.client and self.client != self.format else ""
        parts = [
            f"{self.format} {self.axis} sweep{by}",
            self.configuration_label,
            " / ".join(mix),
            held,
        ]
        return ", ".join(p for p in parts if p)

    @property
    def every_run(self) -> list[LoadTest]:
        """Its runs, one per setting, then the older runs measured again at a setting."""
        return [*self.runs, *self.replicates]

    @property
    def run_pks(self) -> set[int]:
        return {run.pk for run in self.every_run}

    @property
    def configuration_label(self) -> str:
        """What its runs record of the serving configuration, in one line ("" for nothing)."""
        return configuration.describe(self.configuration)

    def x(self, run: LoadTest) -> float:
        return float(run.concurrency if self.axis == CONCURRENCY else run.request_rate)

    def points(self) -> list[knee.SweepPoint]:
        """One point per run with throughput and P99 e2e; runs missing either are left out."""
        return [
            knee.SweepPoint(x=self.x(r), throughput=r.output_tps, p99_ms=r.e2e_p99_ms)
            for r in self.plotted_runs
        ]

    @property
    def plotted_runs(self) -> list[LoadTest]:
        return [r for r in self.runs if r.output_tps is not None and r.e2e_p99_ms]


def _axis(run: LoadTest) -> tuple[str, object] | None:
    """(swept axis, value held fixed), or None for a run with no load setting recorded."""
    rate = math.inf if run.request_rate_inf else run.request_rate
    if run.concurrency is not None and (rate is None or math.isinf(rate)):
        return CONCURRENCY, rate if rate is not None else math.inf
    if run.request_rate is not None:
        return RATE, run.concurrency
    return None


def same_workload(first: LoadTest, run: LoadTest) -> bool:
    """Whether `run` applied `first`'s workload apart from the load (see the module docstring)."""
    a, b = fingerprint_of(first), fingerprint_of(run)
    if fingerprint.length_differences("prompt", a.prompt, b.prompt):
        return False
    if fingerprint.length_differences("output", a.output, b.output):
        return False
    return all(
        x is None or y is None or x == y
        for x, y in ((a.dataset, b.dataset), (a.ignore_eos, b.ignore_eos))
    )


# The annotation a key of `extra` is fetched under (`runs_for_sweeps`).
FETCHED = "configuration_extra_"


def _fetched(run: LoadTest) -> dict:
    return {key: getattr(run, FETCHED + key) for key in configuration.EXTRA_KEYS}


def configuration_of(run: LoadTest) -> dict[str, str]:
    """The run's serving configuration, from the keys of `extra` `runs_for_sweeps` fetched."""
    return configuration.configuration(_fetched(run))


def group_sweeps(runs: list[LoadTest]) -> list[Sweep]:
    """Sweeps among `runs` (from `runs_for_sweeps`: two settings or more), by the rule in the
    module docstring."""
    groups: list[Sweep] = []
    for run in sorted(runs, key=lambda r: (r.measured_at, r.pk)):
        if run.failed:
            continue  # no successful request: no point on a throughput/latency curve
        axis = _axis(run)
        if axis is None:
            continue
        config = configuration_of(run)
        client = configuration.client(_fetched(run))
        for group in groups:
            if (
                group.format == run.format
                and group.client == client
                and (group.axis, group.fixed) == axis
                and configuration.same_configuration(group.configuration, config)
                and same_workload(group.runs[0], run)
            ):
                group.runs.append(run)
                group.configuration = {**config, **group.configuration}
                break
        else:
            groups.append(
                Sweep(
                    format=run.format,
                    axis=axis[0],
                    fixed=axis[1],
                    prompt_tokens=run.prompt_tokens_mean,
                    output_tokens=run.output_tokens_mean,
                    runs=[run],
                    configuration=config,
                    parameters=configuration.parameters(_fetched(run)),
                    client=client,
                )
            )
    sweeps = []
    for group in groups:
        newest: dict[float, LoadTest] = {}
        for run in group.runs:  # oldest first, so later runs replace earlier ones
            x = group.x(run)
            if x in newest:
                group.replicates.append(newest[x])
            newest[x] = run
        group.runs = [newest[x] for x in sorted(newest)]
        if len(group.runs) >= 2:
            sweeps.append(group)
    return sweeps


def runs_for_sweeps(service: Service) -> list[LoadTest]:
    """The service's runs as `group_sweeps` reads them: `extra` deferred but for the keys that
    name their configuration (one query)."""
    fetched = {FETCHED + key: KeyTransform(key, "extra") for key in configuration.EXTRA_KEYS}
    return list(service.load_tests.defer("extra").annotate(**fetched))


def sweeps_for_service(service: Service) -> list[Sweep]:
    return group_sweeps(runs_for_sweeps(service))


def sweep_containing(service: Service, load_test_pk: int) -> Sweep | None:
    for sweep in sweeps_for_service(service):
        if load_test_pk in sweep.run_pks:
            return sweep
    return None


@dataclass(frozen=True)
class SweetSpot:
    sweep: Sweep
    result: knee.KneeResult
    slo_p99_ms: float | None

    @property
    def run(self) -> LoadTest | None:
        if self.result.index is None:
            return None
        return self.sweep.plotted_runs[self.result.index]


def sweet_spot(sweep: Sweep, service: Service) -> SweetSpot:
    slo = service.slo_p99_e2e_ms or None
    return SweetSpot(sweep, knee.sweet_spot(sweep.points(), slo_p99_ms=slo), slo)
