"""`manage.py rebuild_rollups [--days N]`: write the 5-minute and service-merged roll-up rows
for the last N days from the minute and hourly rows (run once after upgrading; idempotent)."""

from datetime import timedelta

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from collectors.services.rollups import rebuild_derived_rollups


class Command(BaseCommand):
    help = "Rebuild the 5-minute and service-merged roll-ups from minute and hourly rows."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--days", type=int, default=30, help="How far back (default 30).")

    def handle(self, *args, days: int, **options) -> None:
        if not 1 <= days <= 3660:
            raise CommandError("--days: a whole number from 1 to 3660.", returncode=2)
        end = timezone.now()
        written = rebuild_derived_rollups(start=end - timedelta(days=days), end=end)
        self.stdout.write(", ".join(f"{n} {kind} rows" for kind, n in written.items()))
