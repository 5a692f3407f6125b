"""Choosing the baseline set a candidate is judged against: the baselines of its workload
fingerprint, within the anchor's regime, at most `BASELINE_WINDOW`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from analysis import regime
from dossiers.models import Baseline, ConfigVersion, Service
from loadtests.gate.stored_runs import fingerprint_of, run_data, workload_differences
from loadtests.models import LoadTest, source_run

BASELINE_WINDOW = 5  # the newest accepted runs of a workload shape that form the reference


@dataclass(frozen=True)
class Match:
    candidates: tuple[LoadTest, ...]  # the runs judged (repeats), all of the baseline's shape
    baselines: tuple[Baseline, ...]  # the reference set, current (or newest) first
    reasons: tuple[str, ...]  # why no baseline fits; empty when one does

    @property
    def candidate(self) -> LoadTest:
        return self.candidates[0]

    @property
    def baseline(self) -> Baseline | None:
        return self.baselines[0] if self.baselines else None


def _baselines(service: Service) -> list[Baseline]:
    """Current first, then newest first."""
    found = list(
        service.baselines.select_related("source_load_test")
        # A baseline promoted from a failed run (before failures were recognised) is no reference.
        .exclude(source_load_test__failure__gt="")
        # Candidates are load-test files (client-side): a baseline recorded from the engine's
        # histograms measured something else and is never their reference.
        .filter(vantage="client")
        .order_by("-measured_at", "-pk")
    )
    return sorted(found, key=lambda b: not b.is_current)


def match_baselines(
    files: Sequence[Sequence[LoadTest]],
    baselines: Sequence[Baseline],
    *,
    window: int = BASELINE_WINDOW,
    regime: bool = True,
) -> Match:
    """The candidate runs and the baseline set they are judged against.

    The workload is the current baseline's when a candidate run's fingerprint is compatible
    with it, else the newest compatible baseline's. The reference set is that anchor and the
    newer-than-a-regime-change baselines of the same fingerprint (`regime_set`), at most
    `window`; the candidates are every compatible run in the files (repeats), and each file must
    hold one. A run that is in both sets (an identical rerun) leaves the reference set unless
    it is all there is. When nothing fits, the reasons name how the first run's workload
    differs from the current baseline's.
    """
    runs = [run for file_runs in files for run in file_runs]
    first = runs[0]
    if not baselines:
        return Match((first,), (), ("the service has no baseline to compare with",))
    for anchor in baselines:  # current first, then newest
        if not any(not workload_differences(anchor, run) for run in runs):
            continue
        missing = [
            number
            for number, file_runs in enumerate(files, start=1)
            if all(workload_differences(anchor, run) for run in file_runs)
        ]
        if missing:
            numbers = ", ".join(str(n) for n in missing)
            return Match(
                (first,),
                (),
                (
                    f"candidate file{'s' if len(missing) > 1 else ''} {numbers} hold no run of "
                    f"the baseline's workload shape ({fingerprint_of(anchor).summary()}): "
                    "repeats must share one shape",
                ),
            )
        candidates: dict[int, LoadTest] = {}
        for run in runs:
            if not workload_differences(anchor, run):
                candidates.setdefault(run.pk, run)
        same = regime_set(anchor, baselines) if regime else _compatible(anchor, baselines)
        reference = [b for b in same if _source_pk(b) not in candidates] or same
        return Match(tuple(candidates.values()), tuple(reference[:window]), ())
    current = baselines[0]
    reasons = workload_differences(current, first)
    label = "current baseline" if current.is_current else "newest baseline"
    intro = (
        f"no baseline has the candidate's workload ({fingerprint_of(first).summary()}); "
        f"the {label} “{current.label}” is {fingerprint_of(current).summary()}"
    )
    return Match((first,), (), (intro, *reasons))


def _compatible(anchor: Baseline, baselines: Sequence[Baseline]) -> list[Baseline]:
    return [b for b in baselines if not workload_differences(anchor, b)]


@dataclass(frozen=True)
class RegimeBreak:
    baseline: Baseline  # the newest baseline left out, and every older one with it
    reason: str


def regime_boundary(anchor: Baseline, baselines: Sequence[Baseline]) -> RegimeBreak | None:
    """Where the anchor's regime starts among the older compatible baselines: the newest older
    baseline separated from the anchor by a config change or by a step the gate's own test
    sees (`analysis.regime`), unless it was promoted together with the anchor."""
    older = [
        b
        for b in _compatible(anchor, baselines)
        if b.pk != anchor.pk and (b.measured_at, b.pk) < (anchor.measured_at, anchor.pk)
    ]
    older.sort(key=lambda b: (b.measured_at, b.pk), reverse=True)
    anchor_data = None
    for b in older:
        if _together(anchor, b):
            continue
        config = (
            ConfigVersion.objects.filter(
                service_id=anchor.service_id,
                created_at__gt=b.measured_at,
                created_at__lte=anchor.measured_at,
            )
            .order_by("created_at")
            .first()
        )
        if config is not None:
            return RegimeBreak(b, f"config v{config.version} was deployed after it")
        anchor_data = anchor_data or run_data(anchor)
        step = regime.step_between(run_data(b), anchor_data)
        if step:
            return RegimeBreak(b, step)
    return None


def regime_set(anchor: Baseline, baselines: Sequence[Baseline]) -> list[Baseline]:
    """The anchor's reference set: compatible baselines newer than the regime boundary (and
    those promoted with the anchor), current first, then newest first."""
    same = _compatible(anchor, baselines)
    boundary = regime_boundary(anchor, baselines)
    if boundary is None:
        return same
    cut = (boundary.baseline.measured_at, boundary.baseline.pk)
    return [
        b for b in same if b.pk == anchor.pk or _together(anchor, b) or (b.measured_at, b.pk) > cut
    ]


def current_reference(service: Service) -> list[Baseline]:
    """The baseline set the gate would use now for the current baseline's workload."""
    baselines = _baselines(service)
    if not baselines:
        return []
    return regime_set(baselines[0], baselines)[:BASELINE_WINDOW]


def reference_leavers(service: Service, before: Sequence[Baseline]) -> str:
    """After a promotion: which baselines of the set before it left the gate's reference set,
    and why (a new regime, or another workload); "" when none did."""
    after = {b.pk for b in current_reference(service)}
    gone = [b for b in before if b.pk not in after]
    if not gone:
        return ""
    baselines = _baselines(service)
    boundary = regime_boundary(baselines[0], baselines) if baselines else None
    if boundary is not None:
        why = f"a new regime: {boundary.reason} (“{boundary.baseline.label}”)"
    else:
        why = "the new baseline applies another workload"
    names = ", ".join(f"“{b.label}” (#{b.pk})" for b in gone)
    return f"leaving the gate's reference set: {names}; {why}"


def _together(a: Baseline, b: Baseline) -> bool:
    """Promoted together: one import of several repeats (`LoadTest.promotion_batch`)."""
    run_a, run_b = source_run(a), source_run(b)
    if run_a is None or run_b is None or not run_a.promotion_batch:
        return False
    return run_a.promotion_batch == run_b.promotion_batch


def match_baseline(candidates: Sequence[LoadTest], baselines: Sequence[Baseline]) -> Match:
    """One file's runs against the baselines (see `match_baselines`)."""
    return match_baselines([candidates], baselines)


def _source_pk(baseline: Baseline) -> int | None:
    run = source_run(baseline)
    return run.pk if run is not None else None
