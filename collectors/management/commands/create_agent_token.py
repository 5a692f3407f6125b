"""`manage.py create_agent_token --host H`: issue a token (creating the host if needed) and
print it once. Only its prefix and HMAC are stored."""

from django.core.management.base import BaseCommand, CommandError

from collectors.services.tokens import token_issue_for_host_name


class Command(BaseCommand):
    help = "Create an agent token for a host (created if missing) and print it once."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", required=True, help="The host name the agent reports.")
        parser.add_argument("--label", default="", help="A note to tell tokens apart.")

    def handle(self, *args, host: str, label: str, **options) -> None:
        host = host.strip()
        if not host or len(host) > 200:
            raise CommandError("--host: a name of 1 to 200 characters.", returncode=2)
        token, plaintext = token_issue_for_host_name(host_name=host, label=label)
        self.stderr.write(
            f"Token {token.prefix}… for host {token.host.name!r}. It is shown once: keep it now."
        )
        self.stdout.write(plaintext)
