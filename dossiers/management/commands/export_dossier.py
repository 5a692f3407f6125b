"""`manage.py export_dossier SLUG [-o FILE]`: the whole dossier as one Markdown file."""

from django.core.management.base import BaseCommand, CommandError

from core.commands import write_output
from dossiers.markdown import export_dossier
from dossiers.models import Service


class Command(BaseCommand):
    help = "Write a service's dossier as Markdown to stdout or a file."

    def add_arguments(self, parser):
        parser.add_argument("slug", help="The service's slug.")
        parser.add_argument("-o", "--output", help="Write to this file instead of stdout.")

    def handle(self, *args, slug: str, output: str | None = None, **options):
        service = Service.objects.select_related("team").filter(slug=slug).first()
        if service is None:
            raise CommandError(f"Unknown service slug: '{slug}'.", returncode=2)
        write_output(self, export_dossier(service), output)
        if output:
            self.stderr.write(f"Wrote {service.slug}'s dossier to {output}.")
