"""`manage.py seed_demo`: import the demo fleet (idempotent) from the files under `demo/`.

Dossiers (`demo/dossiers/*.md`) go through the dossier import, load tests
(`demo/loadtests/<slug>/`) through the load-test import: the paths a user's files take.

The demo users have passwords printed in the README. With DEBUG off (a production setting)
the command refuses to create them unless told `--allow-demo-users`; `check --deploy` fails
while one of those passwords still works (dossiers.checks).
"""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from demo.history import backfill_fleet
from demo.receivers import ensure_demo_receivers
from dossiers import demo
from dossiers.models import Team
from loadtests.demo import add_demo_loadtests


class Command(BaseCommand):
    help = "Create the demo users, teams and services that are missing (--rebuild: all of them)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="Delete and rebuild demo services that already exist.",
        )
        parser.add_argument(
            "--history-days",
            type=int,
            default=14,
            help="days of roll-up history to back-fill per service (0: none)",
        )
        parser.add_argument(
            "--allow-demo-users",
            action="store_true",
            help="Create the demo users (known passwords) even with DEBUG off.",
        )

    def handle(
        self,
        *args,
        rebuild: bool = False,
        history_days: int = 14,
        allow_demo_users: bool = False,
        **options,
    ):
        if not settings.DEBUG and not allow_demo_users:
            raise CommandError(
                "DEBUG is off: refusing to create demo users with known passwords "
                "(set DEBUG=1 for a demo, or pass --allow-demo-users).",
                returncode=2,
            )
        self.stdout.write("Building the demo fleet:")
        result = demo.build_demo(stdout=self.stdout, rebuild=rebuild)
        add_demo_loadtests(list(result.services.values()))
        if history_days > 0:
            backfill_fleet(days=history_days, stdout=self.stdout)
        teams = Team.objects.filter(services__in=list(result.services.values())).distinct()
        if added := ensure_demo_receivers(list(teams)):
            self.stdout.write(f"  {added} demo on-call receiver(s): alerts go to var/demo-mail/")
        self.stdout.write(
            self.style.SUCCESS(
                f"{len(result.created)} service(s) built, {len(result.skipped)} already there."
            )
        )
        self.stdout.write(
            f"Demo login: {demo.DEMO_USERNAME} / {demo.DEMO_PASSWORD}  "
            f"(admin: {demo.ADMIN_USERNAME} / {demo.ADMIN_PASSWORD})"
        )
