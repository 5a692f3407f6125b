"""manage.py perf_gate --service S RUN [RUN ...] [--format F]

Compares the candidate run(s) in the files (several files: the repeats of one build, judged
together) with the service's baseline set of the same workload shape and prints the table.
Exit 0 pass, 1 regression, 2 bad input (one line): a bad file, an unknown service, no
baseline, a refused workload shape, invalid gate overrides. Every run is stored (GateRun).
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from loadtests.formats import format_names
from loadtests.gate import GateInputError, run_gate
from loadtests.importing import LoadTestImportError, parse_measured_at
from loadtests.management.commands.import_loadtest import (
    one_line,
    read_file,
    read_paths,
    service_named,
)
from loadtests.models import GateRun

EXIT_REGRESSION = 1
EXIT_BAD_INPUT = 2


class Command(BaseCommand):
    help = "Release gate: compare load-test files (repeats) with the service's baseline set."

    def add_arguments(self, parser) -> None:
        parser.add_argument("files", nargs="+", metavar="RUN", help="Result file(s): repeats.")
        parser.add_argument("--service", required=True, help="The service's slug.")
        parser.add_argument(
            "--format", choices=format_names(), help="Force a format (else detected)."
        )
        parser.add_argument(
            "--measured-at",
            metavar="TIME",
            help="ISO 8601 time of the candidate when its file has none (GenAI-Perf).",
        )

    def handle(self, *args, **options) -> None:
        service = service_named(options["service"])
        files = []
        for path in options["files"]:  # a folder is its files, as for import_loadtest
            is_folder = Path(path).is_dir()
            files += read_paths([path]).files if is_folder else [(read_file(path), Path(path).name)]
        try:
            measured_at = (
                parse_measured_at(options["measured_at"]) if options["measured_at"] else None
            )
            gate_run = run_gate(
                service=service,
                source=GateRun.Source.CLI,
                files=files,
                format=options["format"],
                measured_at=measured_at,
            )
        except (LoadTestImportError, GateInputError) as exc:
            raise CommandError(one_line(str(exc)), returncode=EXIT_BAD_INPUT) from exc
        if gate_run.verdict == GateRun.Verdict.REFUSED:
            reasons = "; ".join(gate_run.result.get("reasons", [])) or "not compared"
            raise CommandError(
                one_line(f"refused (gate run #{gate_run.pk}): {reasons}"),
                returncode=EXIT_BAD_INPUT,
            )
        self.stdout.write(gate_run.table)
        if gate_run.verdict == GateRun.Verdict.REGRESSION:
            raise SystemExit(EXIT_REGRESSION)
