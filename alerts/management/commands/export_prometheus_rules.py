"""Print a service's alert rules as a Prometheus rules file (for `rule_files:`)."""

from django.core.management.base import BaseCommand, CommandError

from alerts.prometheus_rules import rules_yaml
from core.commands import write_output
from dossiers.models import Service


class Command(BaseCommand):
    help = (
        "Print SLUG's enabled alert rules as a Prometheus rules file over the engine's and "
        "dcgm-exporter's metric names. Exit 2 on bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The service's slug.")
        parser.add_argument(
            "--engine-selector",
            help='Label matchers for the engine\'s series, e.g. job="vllm" '
            "(default: the service's Prometheus source's, else none).",
        )
        parser.add_argument(
            "--dcgm-selector", help="Label matchers for dcgm-exporter's series (same default)."
        )
        parser.add_argument("--output", "-o", help="Write to this file instead of stdout.")

    def handle(self, *args, **options):
        service = Service.objects.filter(slug=options["slug"]).first()
        if service is None:
            raise CommandError(f"no service with slug {options['slug']!r}", returncode=2)
        try:
            text = rules_yaml(
                service,
                engine_selector=options["engine_selector"],
                dcgm_selector=options["dcgm_selector"],
            )
        except ValueError as exc:
            raise CommandError(str(exc), returncode=2) from None
        write_output(self, text, options["output"])
