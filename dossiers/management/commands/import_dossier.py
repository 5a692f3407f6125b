"""`manage.py import_dossier FILE --service SLUG [--rename] [--dry-run]`: merge a dossier file.

Exit status 2 with a one-line reason (naming the line) when the file cannot be imported: no
`perfhub-dossier` header, an unknown version, a malformed header or section, or the dossier of
another service without `--rename`. Nothing is changed then.
"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from dossiers import markdown
from dossiers.models import Service


class Command(BaseCommand):
    help = "Import a dossier Markdown file (as written by export_dossier) into a service."

    def add_arguments(self, parser):
        parser.add_argument("file", help="The Markdown file.")
        parser.add_argument("--service", required=True, help="Slug of the service to import into.")
        parser.add_argument("--author", help="Username recorded as the author of what is added.")
        parser.add_argument(
            "--rename",
            action="store_true",
            help="Import another service's dossier: the target takes its name and settings.",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Say what would change; change nothing."
        )

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
            if options["dry_run"]:
                plan = markdown.plan_import(service=target, text=text)
                self.stdout.write(f"Would import into {target.slug}: {plan.summary()}.")
                return
            plan = markdown.import_dossier(
                service=target, text=text, author=user, rename=options["rename"]
            )
        except markdown.OtherServiceError as exc:
            raise CommandError(f"{file}: {exc} Pass --rename.", returncode=2) from None
        except markdown.DossierFormatError as exc:
            raise CommandError(f"{file}: {exc}", returncode=2) from None
        self.stdout.write(self.style.SUCCESS(f"Imported into {target.slug}: {plan.summary()}."))
