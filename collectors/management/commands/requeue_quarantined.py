"""`manage.py requeue_quarantined [--host H]`: give quarantined batches another roll-up, once
whatever made them fail is fixed. Prints how many were requeued."""

from django.core.management.base import BaseCommand, CommandError

from collectors.models import Host
from collectors.services.rollups import requeue_quarantined


class Command(BaseCommand):
    help = "Put quarantined batches (of one host, or all) back in the roll-up queue."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=None, help="Only this host's batches.")

    def handle(self, *args, host: str | None, **options) -> None:
        host_id = None
        if host is not None:
            found = Host.objects.filter(name=host.strip()).values_list("pk", flat=True).first()
            if found is None:
                raise CommandError(f"--host: no host named {host!r}.", returncode=2)
            host_id = found
        n = requeue_quarantined(host_id=host_id)
        self.stdout.write(f"{n} batch{'es' if n != 1 else ''} requeued")
