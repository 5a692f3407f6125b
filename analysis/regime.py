"""Which older baselines belong to the newest baseline's regime (the gate's reference set).

After a service's behaviour steps (a heavier tail, a new engine version) and one run of the new
regime is promoted, keeping the older baselines in the set makes every identical build of the
new regime "regress" against their mix. So the set is cut at the newest older baseline that the
gate's own test tells apart from the anchor, in either direction: the same statistics that would
fail a build decide that two baselines are not one regime.
"""

from __future__ import annotations

from collections.abc import Sequence

from analysis import gate


def step_between(older: gate.RunData, newer: gate.RunData) -> str:
    """A sentence naming a significant change from `older` to `newer` (either way), or ""."""
    for base, cand, word in ((older, newer, "worse"), (newer, older, "better")):
        try:
            result = gate.compare_runs([base], [cand])
        except ValueError:  # nothing measured by both: no evidence of a step
            return ""
        if not result.passed:
            rows = ", ".join(row.label for row in result.regressions)
            return f"a step between them: the newer baseline is significantly {word} in {rows}"
    return ""


def regime_start(
    anchor: gate.RunData, older: Sequence[gate.RunData], *, together: Sequence[bool] = ()
) -> tuple[int, str] | None:
    """(index into `older`, newest first, of the first baseline outside the anchor's regime, and
    why), or None when all belong. Baselines promoted together with the anchor (`together`)
    always belong: they are repeats measured as one set."""
    for index, run in enumerate(older):
        if index < len(together) and together[index]:
            continue
        step = step_between(run, anchor)
        if step:
            return index, step
    return None
