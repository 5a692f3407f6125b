"""manage.py import_loadtest FILE --service S [--baseline [--run N]] [--format F]

Exit 0 after printing what was imported; exit 2 with the message on a bad file, an unknown
service or an ambiguous --baseline. With several runs in one file, --baseline needs --run N
(1-based): promoting "the last" or "the first" of a sweep would silently pick a reference.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from dossiers.models import Service
from loadtests.formats import FORMATS
from loadtests.importing import LoadTestImportError, import_loadtest_file
from loadtests.models import LoadTest


def read_file(path: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}", returncode=2) from exc


def service_named(slug: str) -> Service:
    try:
        return Service.objects.get(slug=slug)
    except Service.DoesNotExist:
        raise CommandError(f"unknown service {slug!r}", returncode=2) from None


class Command(BaseCommand):
    help = "Import a load-test result file (vLLM bench, GenAI-Perf, guidellm, llmperf)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("file")
        parser.add_argument("--service", required=True, help="The service's slug.")
        parser.add_argument("--format", choices=FORMATS, help="Force a format (else detected).")
        parser.add_argument(
            "--baseline", action="store_true", help="Promote the run to the service's baseline."
        )
        parser.add_argument(
            "--run",
            type=int,
            metavar="N",
            help="With --baseline and a file of several runs: the run to promote (1-based).",
        )

    def handle(self, *args, **options) -> None:
        service = service_named(options["service"])
        content = read_file(options["file"])
        try:
            runs = import_loadtest_file(
                service=service,
                content=content,
                filename=Path(options["file"]).name,
                format=options["format"],
                baseline=options["baseline"],
                baseline_run=options["run"],
                origin=LoadTest.Origin.CLI,
            )
        except LoadTestImportError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        created = sum(1 for r in runs if r.just_created)
        self.stdout.write(
            f"{service.slug}: {len(runs)} run{'s' if len(runs) != 1 else ''} in "
            f"{options['file']} ({runs[0].format}), {created} new, "
            f"{len(runs) - created} already imported"
        )
        for number, run in enumerate(runs, start=1):
            promoted = run.promoted_to
            mark = " -> current baseline" if promoted is not None and promoted.is_current else ""
            self.stdout.write(
                f"  {number}. #{run.pk} {run.label}: output {_num(run.output_tps)} tok/s, "
                f"P99 e2e {_num(run.e2e_p99_ms)} ms{mark}"
            )


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"
