"""manage.py create_ci_token --service S [--can-promote] [--no-import] [--no-gate] [--label L]
manage.py create_ci_token --team T ...  (every service of the team)

Prints the token once on stdout (its prefix and scope on stderr); only a SHA-256 is stored.
Exit 2 with a one-line reason on bad input.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from dossiers.models import Service, Team
from loadtests.tokens import ci_token_issue


class Command(BaseCommand):
    help = "Create a CI token for one service (or a team's services) and print it once."

    def add_arguments(self, parser) -> None:
        scope = parser.add_mutually_exclusive_group()
        scope.add_argument("--service", help="The service's slug.")
        scope.add_argument("--team", help="A team's slug: the token covers all its services.")
        parser.add_argument("--label", default="", help="A note to tell tokens apart.")
        parser.add_argument(
            "--can-promote", action="store_true", help="May promote an import to baseline."
        )
        parser.add_argument("--no-import", action="store_true", help="May not import load tests.")
        parser.add_argument("--no-gate", action="store_true", help="May not run the gate.")

    def handle(self, *args, **options) -> None:
        service = team = None
        if options["service"]:
            service = Service.objects.select_related("team").filter(slug=options["service"]).first()
            if service is None:
                raise CommandError(f"unknown service {options['service']!r}", returncode=2)
        elif options["team"]:
            team = Team.objects.filter(slug=options["team"]).first()
            if team is None:
                raise CommandError(f"unknown team {options['team']!r}", returncode=2)
        else:
            raise CommandError("name the scope: --service S or --team T", returncode=2)
        if len(options["label"]) > 100:
            raise CommandError("--label: at most 100 characters", returncode=2)
        try:
            token, plaintext = ci_token_issue(
                service=service,
                team=team,
                label=options["label"],
                can_import=not options["no_import"],
                can_promote=options["can_promote"],
                can_gate=not options["no_gate"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages), returncode=2) from None
        self.stderr.write(
            f"{token.credential_label} for {token.scope_label} ({token.permissions_label}). "
            "It is shown once: keep it now."
        )
        self.stdout.write(plaintext)
