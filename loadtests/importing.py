"""Importing load-test files into a service's dossier, and promoting a run to its baseline.

One file, one transaction: a file that fails to parse or validate stores nothing. A run is
identified by (service, SHA-256 of the file, position in the file), so importing the same file
again returns the runs already stored and writes nothing.
"""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from analysis import sketches, twins
from analysis.percentiles import LATENCY_FIELDS
from dossiers import services
from dossiers.models import RUN_FIELD_NAMES, Baseline, GpuSource, Service
from loadtests.formats import (
    SHARED_TIME_NOTE,
    TWIN_FIGURES,
    LoadTestFormatError,
    ParsedRun,
    archives,
    decode,
    load_documents,
    parse_loadtest,
)
from loadtests.formats.packing import unpacked
from loadtests.formats.per_request import sample_statistics
from loadtests.lint import RunLint, lint_runs
from loadtests.models import CIToken, LoadTest, LoadTestSketch

# Larger files are refused before parsing: even a long sweep with per-request arrays is smaller.
MAX_FILE_BYTES = 50 * 1024 * 1024
MAX_UPLOAD_FILES = 20  # files in one upload: the stages of a sweep, repeats of a build


# A run measured before this is a typo, not a load test; one "measured" later than now is too.
EARLIEST_MEASURED_AT = datetime(2015, 1, 1, tzinfo=UTC)
FUTURE_SLACK = timedelta(minutes=10)


class LoadTestImportError(ValueError):
    """A file that cannot be imported; the message names the format and the key or line."""


class MeasuredAtError(LoadTestImportError):
    """A `measured at` the importer gave that cannot be a run's time."""


class PromotionError(LoadTestImportError):
    """A run that cannot become a baseline (it failed, or has refusing lint findings)."""


def check_measured_at_value(
    value: datetime | None, *, zone_unknown: bool = False
) -> datetime | None:
    """An aware datetime inside [2015, now + 10 min], in UTC; naive times are read as UTC.
    `zone_unknown`: a client's local time read as UTC, which runs ahead of UTC by its zone's
    offset (up to 14 hours) east of Greenwich."""
    if value is None:
        return None
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    value = value.astimezone(UTC)
    ahead = FUTURE_SLACK + (twins.LARGEST_OFFSET if zone_unknown else timedelta(0))
    latest = timezone.now() + ahead
    if not EARLIEST_MEASURED_AT <= value <= latest:
        limit = "14 hours (a local time read as UTC)" if zone_unknown else "10 minutes"
        raise MeasuredAtError(
            f"measured at {value:%Y-%m-%dT%H:%M:%SZ} is outside "
            f"{EARLIEST_MEASURED_AT:%Y-%m-%d} .. now + {limit}"
        )
    return value


# How a format notes a file time written without a zone (vLLM's `date`: the client's local
# time), which `file_timezone` re-reads in the zone the importer names.
LOCAL_TIME_NOTE = "read as UTC"
# A run's time source when the importer gave the time (`measured_at`): not the file's, so it
# says nothing about which run the file holds (`_refuse_a_twin`).
GIVEN_TIME_NOTE = "given by the importer (the file has no time)"


def parse_file_timezone(name: str) -> ZoneInfo:
    """`--file-timezone`: the IANA zone a file's zone-less time was written in."""
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        raise MeasuredAtError(
            f"file timezone {name!r} is not an IANA time zone (e.g. Europe/Berlin, UTC)"
        ) from None


def parse_measured_at(text: str) -> datetime:
    """`--measured-at` / `measured_at=`: an ISO 8601 date or time (no zone: UTC)."""
    try:
        value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise MeasuredAtError(
            f"measured at {text!r} is not an ISO 8601 time (e.g. 2026-11-30T14:05:00Z)"
        ) from None
    return check_measured_at_value(value)


def json_safe(value: Any, depth: int = 0) -> Any:
    """`value` as PostgreSQL's jsonb takes it: no NaN or infinity, no NUL in strings."""
    if depth > 64:
        return None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value.replace("\x00", "")
    if isinstance(value, dict):
        return {json_safe(str(k), depth + 1): json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item, depth + 1) for item in value]
    return value


def content_digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def unpack(content: bytes, filename: str | None = None) -> tuple[bytes, str | None]:
    """(the file's own bytes, its name): a gzip-compressed file is read as the file it holds,
    so a run imported as `x.json` and as `x.json.gz` is one file (one digest). Raises
    LoadTestImportError for a damaged gzip file or one expanding past MAX_FILE_BYTES."""
    try:
        return unpacked(content, filename, limit=MAX_FILE_BYTES)
    except LoadTestFormatError as exc:
        raise LoadTestImportError(str(exc)) from exc


def parse_file(
    content: bytes, *, filename: str | None = None, format: str | None = None
) -> list[ParsedRun]:
    """The file's runs, or LoadTestImportError with the parser's message."""
    if len(content) > MAX_FILE_BYTES:
        raise LoadTestImportError(
            f"the file is {len(content):,} bytes; the limit is {MAX_FILE_BYTES:,}"
        )
    try:
        runs = parse_loadtest(content, format=format or None, filename=filename)
    except LoadTestFormatError as exc:
        raise LoadTestImportError(str(exc)) from exc
    if not runs:
        raise LoadTestImportError("the file holds no runs")
    return runs


def lint_file(content: bytes, runs: list[ParsedRun], *, format: str | None = None) -> list[RunLint]:
    """The lint findings and workload fingerprint of each run of a file that parsed."""
    try:
        documents = load_documents(decode(content), format=format or None)
    except LoadTestFormatError:  # parsed a moment ago; cannot happen, but never a 500
        documents = []
    return lint_runs(documents, runs)


def _validation_message(exc: ValidationError, run_number: int) -> str:
    if hasattr(exc, "message_dict"):
        detail = "; ".join(
            f"{field}: {' '.join(messages)}" for field, messages in exc.message_dict.items()
        )
    else:
        detail = " ".join(exc.messages)
    return f"run {run_number}: {detail}"


def _store_run(
    *,
    service: Service,
    parsed: ParsedRun,
    digest: str,
    index: int,
    filename: str | None,
    user,
    origin: str,
    given_measured_at: datetime | None,
    ci_token=None,
    lint: RunLint | None = None,
    file_timezone: ZoneInfo | None = None,
) -> LoadTest:
    fields = dict(parsed.fields)
    if fields.get("concurrency") is not None:
        fields["concurrency"] = int(fields["concurrency"])
    if fields.get("request_count") is not None:
        fields["request_count"] = int(fields["request_count"])
    file_time, file_time_source = _file_time(parsed, index, file_timezone)
    measured_at = file_time or given_measured_at
    extra = json_safe({**(parsed.extra or {}), "sources": parsed.sources})
    if file_time_source is not None:
        extra["sources"]["measured_at"] = json_safe(file_time_source)
    if parsed.measured_at is None and given_measured_at is not None:
        extra["sources"]["measured_at"] = GIVEN_TIME_NOTE
    run = LoadTest(
        service=service,
        label=json_safe(parsed.label or f"run {index + 1}")[:200],
        format=parsed.format,
        tool_version=json_safe(parsed.tool_version or "")[:40],
        source_name=_fit_name(json_safe(filename or "")),
        content_sha256=digest,
        run_index=index,
        origin=origin,
        imported_by=user if getattr(user, "pk", None) else None,
        ci_token=ci_token,
        errors=parsed.errors,
        request_rate_inf=parsed.request_rate_inf,
        extra=extra,
        failure=(parsed.failure or "")[:200],
        # No time in the file and none given: stored at the import time, shown "date unknown".
        measured_at=measured_at or timezone.now(),
        date_known=measured_at is not None,
        lint=json_safe([f.to_dict() for f in lint.findings]) if lint else [],
        fingerprint=json_safe(lint.fingerprint.to_dict()) if lint else {},
        # GPU figures in a load-test file come from its own telemetry (GenAI-Perf, AIPerf).
        gpu_source=GpuSource.LOAD_TEST if fields.get("gpu_util") is not None else "",
        **fields,
    )
    try:
        run.full_clean(exclude=["imported_by", "ci_token"])
    except ValidationError as exc:
        raise LoadTestImportError(_validation_message(exc, index + 1)) from exc
    run.save()
    try:
        stats = sample_statistics(parsed.samples)
    except ValueError as exc:
        raise LoadTestImportError(f"run {index + 1}: {exc}") from exc
    sketch_rows = [
        LoadTestSketch(
            load_test=run,
            family=family,
            sketch=sketches.dumps(stat.sketch),
            count=stat.count,
            sum_ms=stat.sum_ms,
            min_ms=stat.min_ms,
            max_ms=stat.max_ms,
        )
        for family, stat in stats.items()
        if family in LoadTestSketch.Family.values
    ]
    LoadTestSketch.objects.bulk_create(sketch_rows)
    return run


def _file_time(
    parsed: ParsedRun, index: int, file_timezone: ZoneInfo | None
) -> tuple[datetime | None, str | None]:
    """The run's start as its file records it, and where from (a zone-less local time read in
    `file_timezone` when given); LoadTestImportError for a time no run can have."""
    file_time, file_time_source = parsed.measured_at, (parsed.sources or {}).get("measured_at")
    if (
        file_timezone is not None
        and file_time is not None
        and LOCAL_TIME_NOTE in str(file_time_source)
    ):
        file_time = file_time.replace(tzinfo=file_timezone).astimezone(UTC)
        file_time_source = str(file_time_source).replace(LOCAL_TIME_NOTE, f"in {file_timezone}")
    try:
        check_measured_at_value(file_time, zone_unknown=LOCAL_TIME_NOTE in str(file_time_source))
    except MeasuredAtError as exc:
        raise LoadTestImportError(f"run {index + 1}: {exc} (the file's time)") from exc
    return file_time, file_time_source


def _fit_name(name: str, limit: int = 255) -> str:
    """A file's name as stored: a long path (an archive's member) keeps its end, the file."""
    return name if len(name) <= limit else "…" + name[-(limit - 1) :]


def import_loadtest_file(
    *,
    service: Service,
    content: bytes,
    filename: str | None = None,
    format: str | None = None,
    user=None,
    baseline: bool = False,
    baseline_run: int | None = None,
    origin: str = LoadTest.Origin.WEB,
    measured_at: datetime | None = None,
    ci_token: CIToken | None = None,
    override_lint: str = "",
    promotion_batch: str = "",
    file_timezone: ZoneInfo | None = None,
) -> list[LoadTest]:
    """Store every run of the file on `service`, in file order; all of them or none.

    `ci_token` is the API credential that sent the file (recorded on the runs and on the
    promotion); checking that it may do so is the caller's job.

    Each returned run carries `just_created` (False when this file was imported before, in
    which case nothing is written). `baseline=True` promotes a run to the service's current
    baseline: the only run, or run number `baseline_run` (1-based) when the file holds several;
    with several runs and no number the import is refused, since guessing would pick the
    wrong reference. `file_timezone` re-reads a file time written without a zone (vLLM's
    `date`, the client's local time; else read as UTC) in that zone. A run with a refusing
    lint finding is promoted only with `override_lint`
    (the reason, recorded on the run and the timeline). Raises LoadTestImportError with a
    message naming the key or line at fault.
    """
    content, inner_name = unpack(content, filename)  # the run keeps the name it came under
    runs = parse_file(content, filename=inner_name, format=format)
    _refuse_a_repeat(runs)
    promote_index = _promote_index(runs, baseline=baseline, baseline_run=baseline_run)
    lints = lint_file(content, runs, format=format)
    digest = content_digest(content)
    with transaction.atomic():
        # Serialize imports per service so two uploads of one file cannot race the constraint.
        Service.objects.select_for_update().filter(pk=service.pk).first()
        existing = {
            lt.run_index: lt
            for lt in LoadTest.objects.filter(service=service, content_sha256=digest)
        }
        for index, parsed in enumerate(runs):
            if index not in existing and (
                grown := _refuse_a_twin(service, parsed, index, digest, filename, file_timezone)
            ):
                existing[index] = grown
        stored = []
        for index, parsed in enumerate(runs):
            if index in existing:
                run = existing[index]
                run.just_created = False
            else:
                run = _store_run(
                    service=service,
                    parsed=parsed,
                    digest=digest,
                    index=index,
                    filename=filename,
                    user=user,
                    origin=origin,
                    given_measured_at=measured_at,
                    ci_token=ci_token,
                    lint=lints[index],
                    file_timezone=file_timezone,
                )
                run.just_created = True
            stored.append(run)
        if promote_index is not None:
            promote_load_test(
                load_test=stored[promote_index],
                user=user,
                ci_token=ci_token,
                override_lint=override_lint,
                promotion_batch=promotion_batch,
            )
    return stored


def import_loadtest_files(
    *,
    service: Service,
    files: Sequence[tuple[bytes, str | None]],
    baseline: bool = False,
    **options,
) -> ImportedRuns:
    """Several files as one import (a sweep's stages, one file each; repeats of one build):
    every run of every file, or none (`prepare_files`: an archive is its files; the answer's
    `skipped` names those that are not runs). With several
    files, or one from an archive, an error starts with the name of the file at fault. With
    `baseline`, each file's run is promoted and the runs form one baseline set (one promotion
    batch), as `import_loadtest` does with several files. `options` are
    `import_loadtest_file`'s."""
    prepared = prepare_files(files)
    batch = uuid.uuid4().hex if baseline and len(prepared) > 1 else ""
    stored = ImportedRuns(skipped=prepared.skipped)
    with transaction.atomic():
        for content, name in prepared:
            try:
                stored += import_loadtest_file(
                    service=service,
                    content=content,
                    filename=name,
                    baseline=baseline,
                    promotion_batch=batch,
                    **options,
                )
            except LoadTestImportError as exc:
                if not names_each_file(files, prepared):
                    raise
                raise type(exc)(f"{name}: {exc}") from exc  # a PromotionError stays one
    return stored


def names_each_file(
    uploaded: Sequence[tuple[bytes, str | None]], prepared: Sequence[tuple[bytes, str | None]]
) -> bool:
    """Whether an error must name the file at fault: several files, or a file the upload did
    not name itself (an archive's member, a joined run folder)."""
    return len(prepared) > 1 or [n for _, n in prepared] != [n for _, n in uploaded]


class PreparedFiles(list):
    """`prepare_files`' answer: the (content, name) files to import, and in `skipped` the names of
    the files an archive or folder held that are not runs."""

    def __init__(self, files=(), skipped: Sequence[str] = ()) -> None:
        super().__init__(files)
        self.skipped = list(skipped)


class ImportedRuns(list):
    """`import_loadtest_files`' answer: the runs, and in `skipped` the files left out."""

    def __init__(self, runs=(), skipped: Sequence[str] = ()) -> None:
        super().__init__(runs)
        self.skipped = list(skipped)


def describe_skipped(names: Sequence[str], shown: int = 5) -> str:
    """What an import left out of a folder or archive, in one sentence."""
    count = len(names)
    listed = ", ".join(names[:shown]) + (f" and {count - shown} more" if count > shown else "")
    what = "files that are not runs" if count != 1 else "file that is not a run"
    return f"Skipped {count} {what}: {listed}."


def prepare_files(
    files: Sequence[tuple[bytes, str | None]], skipped: Sequence[str] = ()
) -> PreparedFiles:
    """The files an upload's files stand for: an archive (.zip, .tar, .tar.gz) is its members,
    named `archive/path`, without the files that are not runs (`archives.skipped`, `arranged`:
    their names are kept in `skipped`, after any the caller passes); a run folder of a tool
    that writes one run to several files (evalscope, MLPerf) is one document
    (`archives.joined`). Raises LoadTestImportError for a damaged or oversized
    archive, naming it, and when nothing is left to import."""
    expanded: list[tuple[bytes, str | None]] = []
    left_out = list(skipped)
    for content, name in files:
        if not archives.is_archive(content):
            expanded.append((content, name))
            continue
        try:
            folder = archives.expand(content, name, limit=MAX_FILE_BYTES)
        except LoadTestFormatError as exc:
            raise LoadTestImportError(str(exc)) from exc
        root = name or "archive"
        if not folder.files:
            raise LoadTestImportError(f"{root}: holds no load-test file")
        expanded += [(data, f"{root}/{path}") for data, path in folder.files]
        left_out += [f"{root}/{path}" for path in folder.skipped]
    try:
        prepared = archives.joined(expanded)
    except LoadTestFormatError as exc:
        raise LoadTestImportError(str(exc)) from exc
    if not prepared:
        raise LoadTestImportError("no load-test file to import")
    return PreparedFiles(prepared, left_out)


def _refuse_a_twin(
    service: Service,
    parsed: ParsedRun,
    index: int,
    digest: str,
    filename: str | None,
    file_timezone: ZoneInfo | None = None,
) -> LoadTest | None:
    """LoadTestImportError when run `index` of the file is a measurement `service` already holds
    from another file (`analysis.twins`): stored twice, it would count twice. The stored run when
    it came from this file's name at this position: a file the tool appends to (vLLM's
    `--append-result`, SGLang's `--output-file`) grew since, and that run is already imported.
    The stored run too when it is "date unknown" and this file dates it (`fill_in_time`)."""
    if parsed.failed:
        return None

    def known(stored: LoadTest) -> bool:
        """Whether this file's run is `stored` and so not refused: grown, or dating it."""
        return fill_in_time(stored, parsed, index, filename, file_timezone) or _same_file_position(
            stored, filename, index
        )

    if (same := _same_clock_run(service, parsed, digest)) is not None:
        if _same_file_position(same, filename, index):
            return same
        start_ms = twins.SAME_START.total_seconds() * 1000
        raise _stored_already(
            index,
            same,
            f"the same start to {start_ms:g} ms, the same duration and request count",
            "AIPerf's summary and its per-request profile_export.jsonl",
        )
    near = Q()
    for name in LATENCY_FIELDS:
        value = parsed.fields.get(name)
        if value is not None:
            slack = max(twins.ABSOLUTE_MS, twins.RELATIVE * abs(value))
            near |= Q(**{f"{name}__range": (value - slack, value + slack)})
    if not near:
        return None
    candidates = LoadTest.objects.filter(near, service=service, failure="").exclude(
        content_sha256=digest
    )
    new_source = str(parsed.sources.get("measured_at", ""))
    new_local = LOCAL_TIME_NOTE in new_source
    # A time every stage of a sweep shares (llm-d's harness window) says nothing of which run.
    new_time = None if SHARED_TIME_NOTE in new_source else parsed.measured_at
    for stored in candidates.order_by("pk"):
        stored_source = str((stored.extra.get("sources") or {}).get("measured_at"))
        stored_local = LOCAL_TIME_NOTE in stored_source
        own_time = _time_from_file(stored) and SHARED_TIME_NOTE not in stored_source
        shared = twins.same_measurement(
            parsed.fields,
            {name: getattr(stored, name) for name in (*RUN_FIELD_NAMES, *LATENCY_FIELDS)},
            new_time,
            stored.measured_at if own_time else None,
            # A zone-less local time read as UTC (vLLM's `date`, guidellm's CSV) is off by the
            # client's zone: the other file's exact time is that far from it.
            zone_unknown=new_local or stored_local,
        )
        if shared is not None:
            if known(stored):
                return stored
            raise _stored_already(
                index,
                stored,
                f"its {len(shared)} latency figures agree to a hundredth of a millisecond "
                f"({', '.join(shared)})",
                "GenAI-Perf's and AIPerf's .json and .csv",
            )
    if (found := _same_tool_figures(service, parsed, digest)) is not None:
        stored, shared = found
        if known(stored):
            return stored
        raise _stored_already(
            index,
            stored,
            f"its {len(shared)} figures as GenAI-Perf computes its summary from the per-request "
            f"file agree to a hundredth of a millisecond ({', '.join(shared)})",
            "GenAI-Perf's summary profile_export_genai_perf.json and the per-request "
            "profile_export.json it was computed from",
        )
    return None


def fill_in_time(
    stored: LoadTest,
    parsed: ParsedRun,
    index: int,
    filename: str | None,
    file_timezone: ZoneInfo | None = None,
) -> bool:
    """Date a stored run from another file of the same measurement: a run stored "date unknown"
    (its file had no time, none was given: an inference-perf stage without its stub, GenAI-Perf's
    summary) takes this file's start, and its duration where it has none. A figure already
    stored is never replaced, and the run is not stored again. Whether it was dated; the dated
    run's `filled_in` says how, for the import's answer."""
    if stored.date_known:
        return False  # the file's time, or one the importer gave: both stand
    when, source = _file_time(parsed, index, file_timezone)
    if when is None or SHARED_TIME_NOTE in str(source):
        return False  # no time, or one every stage of a sweep shares (llm-d's harness window)
    name = filename or "another file"
    sources = dict(stored.extra.get("sources") or {})
    sources["measured_at"] = json_safe(f"{source} (of {name}, imported after this run's file)")
    stored.measured_at, stored.date_known = when, True
    filled = [f"start {when:%Y-%m-%d %H:%M:%S} UTC"]
    duration = parsed.fields.get("duration_s")
    if stored.duration_s is None and duration is not None:
        stored.duration_s = duration
        sources["duration_s"] = json_safe(
            f"{parsed.sources.get('duration_s', 'duration_s')} (of {name})"
        )
        filled.append(f"duration {duration:g} s")
    stored.extra = {**stored.extra, "sources": sources}
    stored.save(update_fields=["measured_at", "date_known", "duration_s", "extra"])
    stored.filled_in = (
        f"run #{stored.pk} “{stored.label}” was stored with its date unknown; {name} holds the "
        f"same measurement, so it is not stored again, and gave the run its {' and '.join(filled)}"
    )
    return True


def filled_in_notes(runs: Sequence[LoadTest]) -> list[str]:
    """What an import filled in of runs already stored (`fill_in_time`), one line a run."""
    return [run.filled_in for run in runs if getattr(run, "filled_in", "")]


def _same_tool_figures(
    service: Service, parsed: ParsedRun, digest: str
) -> tuple[LoadTest, list[str]] | None:
    """A stored run of another file that is this run by the figures its tool computes from one
    of the two files for the other (`TWIN_FIGURES`: GenAI-Perf's summary from its per-request
    export, which gives the summary no time to pair by), and the latency fields they share."""
    mine = (parsed.extra or {}).get(TWIN_FIGURES)
    others = LoadTest.objects.filter(service=service, failure="").exclude(content_sha256=digest)
    if mine:
        p50 = mine.get("e2e_p50_ms")
        if p50 is None:
            return None
        slack = max(twins.ABSOLUTE_MS, twins.RELATIVE * abs(p50))
        others = others.filter(e2e_p50_ms__range=(p50 - slack, p50 + slack))
        for stored in others.order_by("pk"):
            stored_fields = {
                name: getattr(stored, name) for name in (*RUN_FIELD_NAMES, *LATENCY_FIELDS)
            }
            if (shared := twins.same_measurement(mine, stored_fields)) is not None:
                return stored, shared
        return None
    for stored in others.filter(extra__has_key=TWIN_FIGURES).order_by("pk"):
        theirs = stored.extra.get(TWIN_FIGURES)
        shared = twins.same_measurement(parsed.fields, theirs) if isinstance(theirs, dict) else None
        if shared is not None:
            return stored, shared
    return None


def _stored_already(index: int, stored: LoadTest, why: str, example: str) -> LoadTestImportError:
    origin = f" from {stored.source_name}" if stored.source_name else ""
    return LoadTestImportError(
        f"run {index + 1} is the measurement already stored as run #{stored.pk} "
        f"“{stored.label}”{origin}: {why}. A tool writes one run to several files ({example}): "
        "import one of them"
    )


def _refuse_a_repeat(runs: Sequence[ParsedRun]) -> None:
    """LoadTestImportError when a run of the file is another of its runs again (a summary
    block pasted twice into a document): stored twice, it would count twice."""
    # A copy repeats its run's figures to the digit: only runs whose latencies round alike are
    # compared, so a file of many runs costs one pass, not one comparison a pair.
    seen: dict[tuple, list[tuple[int, ParsedRun]]] = {}
    for j, run in enumerate(runs):
        if run.failed:
            continue
        key = tuple(
            None if run.fields.get(n) is None else round(run.fields[n], 2) for n in LATENCY_FIELDS
        )
        for i, earlier in seen.get(key, []):
            shared = twins.same_measurement(
                run.fields, earlier.fields, run.measured_at, earlier.measured_at
            )
            if shared is not None:
                raise LoadTestImportError(
                    f"run {j + 1} repeats run {i + 1} of this file: its {len(shared)} latency "
                    f"figures agree to a hundredth of a millisecond ({', '.join(shared)}). "
                    "A block pasted twice? Import the file without the copy"
                )
        seen.setdefault(key, []).append((j, run))


def _same_file_position(stored: LoadTest, filename: str | None, index: int) -> bool:
    """Whether a stored run came from a file of this name at this position (the same file,
    grown since: `_refuse_a_twin`)."""
    same_name = stored.source_name == _fit_name(json_safe(filename or ""))
    return bool(filename) and same_name and stored.run_index == index


def _same_clock_run(service: Service, parsed: ParsedRun, digest: str) -> LoadTest | None:
    """A stored run of another file that is this run by its clock (`twins.same_clock`)."""
    start, count = parsed.measured_at, parsed.fields.get("request_count")
    if start is None or not count:
        return None
    candidates = LoadTest.objects.filter(
        service=service,
        failure="",
        request_count=int(count),
        measured_at__range=(start - twins.SAME_START, start + twins.SAME_START),
    ).exclude(content_sha256=digest)
    for stored in candidates.order_by("pk"):
        if _time_from_file(stored) and twins.same_clock(
            parsed.fields,
            {"duration_s": stored.duration_s, "request_count": stored.request_count},
            start,
            stored.measured_at,
        ):
            return stored
    return None


def _time_from_file(run: LoadTest) -> bool:
    """Whether the run's time is its file's (not the importer's, nor the import's)."""
    source = str((run.extra.get("sources") or {}).get("measured_at", ""))
    return run.date_known and bool(source) and source != GIVEN_TIME_NOTE


def _promote_index(
    runs: Sequence[ParsedRun], *, baseline: bool, baseline_run: int | None
) -> int | None:
    if baseline_run is not None and not baseline:
        baseline = True
    if not baseline:
        return None
    if baseline_run is None:
        if len(runs) > 1:
            raise LoadTestImportError(
                f"the file holds {len(runs)} runs: say which one becomes the baseline "
                f"(run 1 to {len(runs)})"
            )
        if runs[0].failed:
            raise PromotionError(
                f"the run failed ({runs[0].failure}): a failed run cannot become a baseline"
            )
        return 0
    if not 1 <= baseline_run <= len(runs):
        raise LoadTestImportError(
            f"run {baseline_run} does not exist: the file holds {len(runs)} "
            f"run{'s' if len(runs) > 1 else ''}"
        )
    index = baseline_run - 1
    if runs[index].failed:
        raise PromotionError(
            f"run {baseline_run} failed ({runs[index].failure}): a failed run cannot become "
            "a baseline"
        )
    return index


MEASURED_FIELDS = RUN_FIELD_NAMES


def measured_values(run) -> dict:
    """Every MeasuredRun column of `run`, by name (workload, environment, results)."""
    names = list(MEASURED_FIELDS) + list(LATENCY_FIELDS) + ["vantage", "server_side", "gpu_source"]
    return {name: getattr(run, name) for name in names}


def lint_refusal(load_test: LoadTest) -> str | None:
    """Why the run's lint findings keep it from becoming a baseline, or None."""
    refusing = load_test.refusing_findings
    if not refusing:
        return None
    listed = "; ".join(f"{f['check']}: {f['message']}" for f in refusing)
    return (
        f"“{load_test.label}” has {len(refusing)} refusing lint finding"
        f"{'s' if len(refusing) > 1 else ''} ({listed}): it becomes a baseline only with an "
        "explicit override and its reason"
    )


@transaction.atomic
def promote_load_test(
    *,
    load_test: LoadTest,
    user=None,
    ci_token: CIToken | None = None,
    override_lint: str = "",
    promotion_batch: str = "",
) -> Baseline:
    """Make the run the service's current baseline (a Baseline linked back to it), recording
    who promoted it and through which CI token, if any.

    Promoting a run twice promotes the same Baseline again rather than copying it. A failed
    run (no request succeeded) raises PromotionError: its statistics are absent, not zero. A
    run with refusing lint findings raises PromotionError unless `override_lint` gives the
    reason; the override (who, when, why, which findings) is kept on the run and shown on the
    dossier timeline. Runs promoted with one `promotion_batch` id are one reference set.
    """
    credential = ci_token.credential_label if ci_token is not None else ""
    if promotion_batch and load_test.promotion_batch != promotion_batch:
        load_test.promotion_batch = promotion_batch[:32]
        load_test.save(update_fields=["promotion_batch"])
    baseline = baseline_of_run(
        load_test=load_test, user=user, credential=credential, override_lint=override_lint
    )
    services.baseline_promote(baseline=baseline, user=user, credential=credential)
    return baseline


@transaction.atomic
def baseline_of_run(
    *, load_test: LoadTest, user=None, credential: str = "", override_lint: str = ""
) -> Baseline:
    """The run as a baseline of its service (a Baseline linked back to it), without making it
    the current one: the run's own baseline when it has one, else a new one.

    Refuses (PromotionError) what `promote_load_test` refuses: a failed run, and a run with
    refusing lint findings unless `override_lint` gives the reason.
    """
    if load_test.failed:
        raise PromotionError(
            f"“{load_test.label}” failed ({load_test.failure}): a failed run cannot become "
            "a baseline"
        )
    refusal = lint_refusal(load_test)
    if refusal and not override_lint.strip():
        raise PromotionError(refusal)
    if refusal:
        load_test.lint_override = {
            "reason": override_lint.strip()[:500],
            "by": credential or (user.get_username() if getattr(user, "pk", None) else ""),
            "at": timezone.now().isoformat(),
            "checks": [f["check"] for f in load_test.refusing_findings],
        }
        load_test.save(update_fields=["lint_override"])
    if load_test.promoted_to is not None:
        return load_test.promoted_to
    notes = f"From load test “{load_test.label}” ({load_test.format}"
    notes += f", {load_test.source_name})." if load_test.source_name else ")."
    if not load_test.date_known:
        notes += " The file gave no measurement time: the date is the import's."
    if load_test.lint_override:
        notes += (
            f" Promoted despite lint findings ({', '.join(load_test.lint_override['checks'])}): "
            f"{load_test.lint_override['reason']}"
        )
    baseline = services.baseline_record(
        service=load_test.service,
        label=load_test.label[:120],
        created_by=user if getattr(user, "pk", None) else None,
        notes=notes,
        **measured_values(load_test),
    )
    load_test.promoted_to = baseline
    load_test.save(update_fields=["promoted_to"])
    return baseline
