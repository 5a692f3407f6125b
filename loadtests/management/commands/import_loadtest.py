"""manage.py import_loadtest FILE [FILE ...] --service S [--baseline [--run N]] [--format F]
[--measured-at TIME] [--strict] [--override-lint REASON]

A FILE may be a results folder, or a .zip or .tar.gz of one: its files are imported (without
logs, pages and the like), a tool's run folder (evalscope) as one run.

Exit 0 after printing what was imported; exit 2 with a one-line message on a bad file, an
unknown service, a bad --measured-at, a failed run asked to be the baseline or an ambiguous
--baseline. With several runs in one file, --baseline needs --run N (1-based): promoting "the
last" or "the first" of a sweep would silently pick a reference. Runs whose file has no time
(GenAI-Perf) take --measured-at; without it they are stored as "date unknown". Several files
with --baseline promote their runs together (repeats measured as one baseline set; the gate
compares with the newest few of a shape), the last file's run becoming current.

Every run's lint findings are printed under it ("[refuse] tiny_outputs: ..."). A run with a
refusing finding is not promoted by --baseline (exit 2) unless --override-lint gives the reason,
which the run and the dossier timeline keep. --strict exits 2 when any run has a refusing
finding, after printing them all, and stores nothing.
"""

from __future__ import annotations

import uuid
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.urls import reverse

from dossiers.models import Service
from loadtests.formats import archives, format_names
from loadtests.gate import current_reference, reference_leavers
from loadtests.importing import (
    LoadTestImportError,
    describe_skipped,
    filled_in_notes,
    import_loadtest_file,
    names_each_file,
    parse_file_timezone,
    parse_measured_at,
    prepare_files,
)
from loadtests.models import LoadTest
from loadtests.one_change import changes_into
from loadtests.sweeps import sweeps_for_service


def read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}", returncode=2) from exc


def read_paths(paths: list[str]) -> archives.Folder:
    """(content, path) of each FILE; a directory stands for the files under it (a tool's results
    folder, as its archive would), without those that are not runs (`archives.skipped`,
    `arranged`: named in the answer's `skipped`)."""
    read = archives.Folder([])
    for path in paths:
        folder = Path(path)
        if not folder.is_dir():
            read.files.append((read_file(path), path))
            continue
        members = archives.Folder([])
        for child in sorted(p for p in folder.rglob("*") if p.is_file()):
            if not members.leaves_out(child.relative_to(folder).as_posix(), str(child)):
                members.files.append((read_file(str(child)), str(child)))
        arranged = members.arranged()
        read.files += arranged.files
        read.skipped += arranged.skipped
    return read


def service_named(slug: str) -> Service:
    try:
        return Service.objects.get(slug=slug)
    except Service.DoesNotExist:
        raise CommandError(f"unknown service {slug!r}", returncode=2) from None


class Command(BaseCommand):
    help = "Import load-test result files (formats: docs/loadtest-formats.md)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("files", nargs="+", metavar="FILE")
        parser.add_argument("--service", required=True, help="The service's slug.")
        # The registry is read when the command is built, so registered formats are offered.
        parser.add_argument(
            "--format", choices=format_names(), help="Force a format (else detected)."
        )
        parser.add_argument(
            "--measured-at",
            metavar="TIME",
            help="ISO 8601 time of runs whose file has none (GenAI-Perf), e.g. 2026-11-30T14:05Z.",
        )
        parser.add_argument(
            "--file-timezone",
            metavar="ZONE",
            help="IANA time zone of a file time written without one (vLLM's `date` is the "
            "client's local time; default UTC), e.g. Europe/Berlin.",
        )
        parser.add_argument(
            "--baseline", action="store_true", help="Promote the run to the service's baseline."
        )
        parser.add_argument(
            "--run",
            type=int,
            metavar="N",
            help="With --baseline and a file of several runs: the run to promote (1-based).",
        )
        parser.add_argument(
            "--strict",
            action="store_true",
            help="Exit 2 (and store nothing) when any run has a refusing lint finding.",
        )
        parser.add_argument(
            "--override-lint",
            metavar="REASON",
            default="",
            help="With --baseline: promote despite refusing lint findings, for this reason "
            "(recorded on the run and the dossier timeline).",
        )

    def handle(self, *args, **options) -> None:
        service = service_named(options["service"])
        refusing = 0
        promoting = options["baseline"] or options["run"] is not None
        before = current_reference(service) if promoting else []
        read = read_paths(options["files"])
        try:
            files = prepare_files(read.files, read.skipped)
        except LoadTestImportError as exc:
            raise CommandError(one_line(str(exc)), returncode=2) from exc
        options["several"] = names_each_file(read.files, files)
        # Several files promoted in one command are one baseline set (repeats of one build).
        options["promotion_batch"] = uuid.uuid4().hex if len(files) > 1 else ""
        imported: list[LoadTest] = []
        with transaction.atomic():  # several files: all of them or none
            for content, path in files:
                runs = self._import(service, content, path, options)
                imported += runs
                refusing += sum(len(run.refusing_findings) for run in runs)
            if options["strict"] and refusing:
                transaction.set_rollback(True)
                raise CommandError(
                    f"--strict: {refusing} refusing lint finding{'s' if refusing > 1 else ''} "
                    "(listed above); nothing was stored",
                    returncode=2,
                )
        if files.skipped:
            self.stdout.write(describe_skipped(files.skipped))
        for line in sweep_lines(service, imported):
            self.stdout.write(line)
        if promoting and (leavers := reference_leavers(service, before)):
            self.stdout.write(leavers)

    def _import(self, service: Service, content: bytes, path: str, options: dict) -> list[LoadTest]:
        """Import one file and print its runs and their findings; the runs."""
        try:
            measured_at = (
                parse_measured_at(options["measured_at"]) if options["measured_at"] else None
            )
            zone = options["file_timezone"]
            runs = import_loadtest_file(
                file_timezone=parse_file_timezone(zone) if zone else None,
                service=service,
                content=content,
                filename=Path(path).name,
                format=options["format"],
                baseline=options["baseline"],
                baseline_run=options["run"],
                origin=LoadTest.Origin.CLI,
                measured_at=measured_at,
                override_lint=options["override_lint"],
                promotion_batch=options["promotion_batch"] if options["baseline"] else "",
            )
        except LoadTestImportError as exc:
            message = f"{path}: {exc}" if options["several"] else str(exc)
            raise CommandError(one_line(message), returncode=2) from exc
        created = sum(1 for r in runs if r.just_created)
        self.stdout.write(
            f"{service.slug}: {len(runs)} run{'s' if len(runs) != 1 else ''} in "
            f"{path} ({runs[0].format}), {created} new, "
            f"{len(runs) - created} already imported"
        )
        for note in filled_in_notes(runs):
            self.stdout.write(f"  {note}")
        for number, run in enumerate(runs, start=1):
            promoted = run.promoted_to
            mark = " -> current baseline" if promoted is not None and promoted.is_current else ""
            notes = ""
            if run.failed:
                notes += f" FAILED: {run.failure}"
            if not run.date_known:
                notes += " (date unknown: pass --measured-at)"
            self.stdout.write(
                f"  {number}. #{run.pk} {run.label}: output {_num(run.output_tps)} tok/s, "
                f"P99 e2e {_num(run.e2e_p99_ms)} ms{mark}{notes}"
            )
            for finding in run.findings:
                self.stdout.write(
                    f"     [{finding['severity']}] {finding['check']}: {finding['message']}. "
                    f"Fix: {finding['fix']}"
                )
            if run.lint_override:
                self.stdout.write(
                    f"     promoted despite refusing findings: {run.lint_override['reason']}"
                )
        return runs


def sweep_lines(service: Service, imported: list[LoadTest]) -> list[str]:
    """The sweeps the imported runs are points of, as the planner and the sweep pages see
    them: which configuration, at which settings."""
    pks = {run.pk for run in imported}
    lines = []
    sweeps = sweeps_for_service(service)
    for index, sweep in enumerate(sweeps):
        if not pks & sweep.run_pks:
            continue
        settings = ", ".join(f"{sweep.x(run):g}" for run in sweep.runs)
        again = f"; {len(sweep.replicates)} measured again" if sweep.replicates else ""
        lines.append(f"sweep: {sweep.title}: {sweep.axis} {settings}{again}")
        # Each pair once: as the change from the older sweep into this one.
        for change in changes_into(sweep, sweeps[:index]):
            loads = ", ".join(f"{pair.x:g}" for pair in change.pairs) or "none"
            page = reverse("loadtests:sweep", args=[service.slug, sweep.key])
            lines.append(
                f"  one parameter apart: {change.label} at {sweep.axis} {loads}; record it as an "
                f"experiment on the sweep page ({page})"
            )
    return lines


def one_line(message: str) -> str:
    """Messages quote file content at most partly; keep the CLI's answer to one line."""
    return " ".join(message.split())[:500]


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
