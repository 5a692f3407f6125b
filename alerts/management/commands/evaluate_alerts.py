"""Evaluate every due alert rule once, in-process (what the beat task does each minute)."""

from django.core.management.base import BaseCommand, CommandError
from django.utils.dateparse import parse_datetime

from alerts import services


class Command(BaseCommand):
    help = "Evaluate every due alert rule now (or at --at, RFC 3339) and send notifications."

    def add_arguments(self, parser):
        parser.add_argument("--at", help="Evaluation time, RFC 3339 (default: now).")

    def handle(self, *args, **options):
        now = None
        if options["at"]:
            now = parse_datetime(options["at"])
            if now is None or now.tzinfo is None:
                raise CommandError(
                    "--at: an RFC 3339 time with a zone, e.g. 2026-03-02T09:05:00Z", returncode=2
                )
        report = services.evaluate_all(now)
        self.stdout.write(
            f"evaluated {report.rules} rule(s) at {report.evaluated_at.isoformat()}: "
            f"{len(report.changes)} state change(s), {len(report.notifications)} notification(s)"
        )
