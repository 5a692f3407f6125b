"""Two files, one measurement: is a run the same one already stored from another file?

Load-test tools write one run to several files: GenAI-Perf's and AIPerf's `.json` and `.csv`
exports hold the same figures, the CSV rounded to two decimals. Importing both would store the
run twice, and a sweep, the gate's reference set or a history would count it twice (a
run-to-run spread of zero). Two separate runs never agree on several latency percentiles to a
hundredth of a millisecond, so that agreement is the test: every latency figure both runs
carry agrees within the rounding of a two-decimal export, there are at least `MIN_SHARED` of
them, no load or count figure that both carry differs, and where both files give the run's time
the times agree (files of one run carry the same time; a run measured at another time is
another run, whatever its figures).

Files of one run that compute their figures differently (GenAI-Perf's per-request
`profile_export.json` against its summary: another first token and another duration) are not
caught: their figures differ by more than rounding.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta

from analysis.percentiles import LATENCY_FIELDS

MIN_SHARED = 4  # latency figures both runs carry, at least
ABSOLUTE_MS = 0.006  # a two-decimal export rounds by up to 0.005 ms
RELATIVE = 1e-4  # large figures printed with fewer digits
SAME_LOAD = ("concurrency", "request_rate", "request_count")
# A time written to ms in one file and cut to whole seconds in another (llm-d's report writes
# 00:25:25 for guidellm's 00:25:25.693): less than a second apart.
SAME_TIME = timedelta(seconds=1)


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(ABSOLUTE_MS, RELATIVE * max(abs(a), abs(b)))


def same_measurement(
    new: Mapping[str, float | None],
    stored: Mapping[str, float | None],
    new_time: datetime | None = None,
    stored_time: datetime | None = None,
) -> list[str] | None:
    """The latency fields on which `new` and `stored` (run fields by name) agree, when they are
    one measurement (module docstring); None when they are two. A time is the run's time as its
    file gives it (None: the file gives none)."""
    both_timed = new_time is not None and stored_time is not None
    if both_timed and abs(new_time - stored_time) >= SAME_TIME:
        return None
    for name in SAME_LOAD:
        a, b = new.get(name), stored.get(name)
        if a is not None and b is not None and not _close(float(a), float(b)):
            return None
    shared = []
    for name in LATENCY_FIELDS:
        a, b = new.get(name), stored.get(name)
        if a is None or b is None:
            continue
        if not _close(float(a), float(b)):
            return None
        shared.append(name)
    return shared if len(shared) >= MIN_SHARED else None
