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

Files of one run that compute their figures differently (AIPerf's per-request
`profile_export.jsonl` against its summary) differ by more than rounding; they are caught by
their clock instead (`same_clock`): both give the run's start finer than a second, and the
same start, duration and request count are one run (AIPerf 0.13's two files of one run: 17 ms
and 0.8 ms of 10.7 s apart), where two runs of one service would have to start within
`SAME_START` of each other and last as long to the millisecond. GenAI-Perf's summary has no
time at all; its per-request `profile_export.json` gives the figures GenAI-Perf computes from
it, which `same_measurement` compares with the summary's
(`loadtests.importing._same_tool_figures`).
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
# A time a file writes in the client's local time with no zone (vLLM's `date`, guidellm's CSV)
# is read as UTC: it is off the true time by the zone's offset, a whole number of quarter hours
# within 14 hours either way.
ZONE_STEP = timedelta(minutes=15)
LARGEST_OFFSET = timedelta(hours=14)


SAME_START = timedelta(milliseconds=50)
SAME_DURATION_S = 0.005  # or a thousandth of the duration, the larger


def same_clock(
    new: Mapping[str, float | None],
    stored: Mapping[str, float | None],
    new_time: datetime | None,
    stored_time: datetime | None,
) -> bool:
    """Whether two runs are one by their clock (module docstring): starts given finer than a
    second and within SAME_START, durations within SAME_DURATION_S (or 0.1%), equal counts."""
    if new_time is None or stored_time is None:
        return False
    if new_time.microsecond == 0 or stored_time.microsecond == 0:
        return False  # a time cut to whole seconds tells runs apart to the second only
    if abs(new_time - stored_time) > SAME_START:
        return False
    d1, d2 = new.get("duration_s"), stored.get("duration_s")
    n1, n2 = new.get("request_count"), stored.get("request_count")
    if None in (d1, d2, n1, n2) or int(n1) != int(n2) or not n1:
        return False
    return abs(float(d1) - float(d2)) <= max(SAME_DURATION_S, 1e-3 * max(float(d1), float(d2)))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= max(ABSOLUTE_MS, RELATIVE * max(abs(a), abs(b)))


def same_time(a: datetime, b: datetime, *, zone_unknown: bool = False) -> bool:
    """Whether two files' times of a run are one time: less than SAME_TIME apart, or, when one
    was written without its zone (`zone_unknown`), that apart from a whole zone offset."""
    gap = abs(a - b)
    if not zone_unknown:
        return gap < SAME_TIME
    if gap > LARGEST_OFFSET + SAME_TIME:
        return False
    off = gap % ZONE_STEP
    return min(off, ZONE_STEP - off) < SAME_TIME


def same_measurement(
    new: Mapping[str, float | None],
    stored: Mapping[str, float | None],
    new_time: datetime | None = None,
    stored_time: datetime | None = None,
    *,
    zone_unknown: bool = False,
) -> list[str] | None:
    """The latency fields on which `new` and `stored` (run fields by name) agree, when they are
    one measurement (module docstring); None when they are two. A time is the run's time as its
    file gives it (None: the file gives none); `zone_unknown` when one of them is a local time
    without its zone, read as UTC (`same_time`)."""
    both_timed = new_time is not None and stored_time is not None
    if both_timed and not same_time(new_time, stored_time, zone_unknown=zone_unknown):
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
