"""`manage.py export_recording_rules`: the recording rules an aggregated Prometheus source reads
(`docs/integrations.md`), for the `rule_files:` of the team's Prometheus-compatible store."""

import yaml
from django.core.management.base import BaseCommand, CommandError

from collectors.exposition import engines, recording
from core.commands import write_output


class Command(BaseCommand):
    help = (
        "Print recording rules that sum every host's engine and DCGM series per service, for "
        "PerfHub's aggregated Prometheus sources. Exit 2 on bad input."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--engine",
            action="append",
            help="An engine to export (repeatable; default: every registered engine).",
        )
        parser.add_argument(
            "--no-dcgm", action="store_true", help="Leave out the GPU (dcgm-exporter) group."
        )
        parser.add_argument(
            "--interval",
            type=int,
            default=60,
            help="Seconds between evaluations (default 60); the source's step must equal it.",
        )
        parser.add_argument(
            "--service-label",
            default="service",
            help="The label naming the service on the engine's and DCGM's series.",
        )
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args, **options) -> None:
        sources = list(options["engine"] or engines.engine_names())
        if not options["no_dcgm"]:
            sources.append("dcgm")
        try:
            document = recording.rules_document(
                sources, interval_s=options["interval"], service_label=options["service_label"]
            )
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        header = (
            "# Recording rules for PerfHub's aggregated Prometheus sources, exported by PerfHub.\n"
            f"# Evaluate every {options['interval']} s; set each source's step to the same.\n"
        )
        text = header + yaml.safe_dump(document, sort_keys=False, width=1000)
        write_output(self, text, options["output"])
