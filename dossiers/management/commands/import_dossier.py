"""`manage.py import_dossier FILE --service SLUG`: merge a dossier Markdown file into a service.

Exit status 2 with the reason (naming the section or line) when the file cannot be imported;
nothing is changed then.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dossiers.markdown_io import MarkdownImportError, import_dossier
from dossiers.models import Service


class Command(BaseCommand):
    help = "Import a dossier Markdown file (as written by export_dossier) into a service."

    def add_arguments(self, parser):
        parser.add_argument("file", help="The Markdown file.")
        parser.add_argument("--service", required=True, help="Slug of the service to import into.")
        parser.add_argument("--author", help="Username recorded as the author of what is added.")

    def handle(self, *args, file: str, service: str, author: str | None = None, **options):
        target = Service.objects.filter(slug=service).first()
        if target is None:
            raise CommandError(f"Unknown service slug: '{service}'.", returncode=2)
        user = None
        if author:
            user = get_user_model().objects.filter(username=author).first()
            if user is None:
                raise CommandError(f"Unknown user: '{author}'.", returncode=2)
        try:
            text = Path(file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{file}: cannot read: {exc}", returncode=2) from None
        try:
            summary = import_dossier(service=target, text=text, author=user)
        except MarkdownImportError as exc:
            raise CommandError(f"{file}: {exc}", returncode=2) from None
        self.stdout.write(self.style.SUCCESS(f"Imported into {target.slug}: {summary}."))
