"""Give load tests the engine's figures over their window (again), e.g. after late scrapes."""

from django.core.management.base import BaseCommand, CommandError

from dashboards.vantage import attach_engine_side, layers
from loadtests.models import LoadTest


class Command(BaseCommand):
    help = "Store the engine-side (server) figures of load tests over their window, with the gap."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--service", required=True, help="the service's slug")
        parser.add_argument("--run", type=int, action="append", help="a load test id (repeat)")

    def handle(self, *args, service: str, run: list[int] | None, **options) -> None:
        runs = LoadTest.objects.filter(service__slug=service).select_related("service")
        if run:
            runs = runs.filter(pk__in=run)
        runs = list(runs)
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
