"""Give load tests the engine's figures over their window (again), e.g. after late scrapes."""

import argparse

from django.core.management.base import BaseCommand, CommandError

from core.validators import MAX_ID
from dashboards.vantage import attach_engine_side, layers
from dossiers.models import Service
from loadtests.models import LoadTest


def run_id(text: str) -> int:
    """A load test id as argparse reads it: a positive integer a key column can hold."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a load test id") from None
    if not 1 <= value <= MAX_ID:
        raise argparse.ArgumentTypeError(f"{text!r} is not a load test id")
    return value


class Command(BaseCommand):
    help = "Store the engine-side (server) figures of load tests over their window, with the gap."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--service", required=True, help="the service's slug")
        parser.add_argument("--run", type=run_id, action="append", help="a load test id (repeat)")

    def handle(self, *args, service: str, run: list[int] | None, **options) -> None:
        if not Service.objects.filter(slug=service).exists():
            raise CommandError(f"unknown service {service!r}", returncode=2)
        runs = LoadTest.objects.filter(service__slug=service).select_related("service")
        runs = list(runs.filter(pk__in=run) if run else runs)
        if run and (missing := sorted(set(run) - {r.pk for r in runs})):
            named = ", ".join(map(str, missing))
            raise CommandError(f"--run {named}: no such load test of {service}", returncode=2)
        if not runs:
            raise CommandError(f"no load tests of service {service!r}", returncode=2)
        for r in runs:
            data = attach_engine_side(r)
            if not data:
                self.stdout.write(
                    f"#{r.pk} {r.label}: no scrape of the service overlaps its window"
                )
                continue
            self.stdout.write(
                f"#{r.pk} {r.label}: engine side over {data['covered'][0]} .. "
                f"{data['covered'][1]} ({data['scrape_windows']} scrape windows)"
            )
            for layer in layers(r):
                self.stdout.write(f"  {layer.text()}")
