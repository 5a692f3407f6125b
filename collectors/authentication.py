"""`Authorization: Token <agent token>` for DRF, resolving to the token's host.

Modelled on pretix's device auth: `request.user` is an `AgentUser` (authenticated, no
Django user behind it) and `request.auth` is the `AgentToken`, whose `.host` the views use.
A token of another kind (a CI token) is left to the next authentication class.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions, permissions

from collectors.models import AgentToken, Host
from collectors.services.tokens import TOKEN_SCHEME, token_authenticate
from dossiers.credentials import HEADER_KEYWORD, header_token


@dataclass(frozen=True)
class AgentUser:
    """The principal behind an agent token: a host, not a person."""

    host: Host
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_superuser: bool = False
    is_staff: bool = False
    pk: None = None

    def get_username(self) -> str:
        return f"agent:{self.host.name}"

    def __str__(self) -> str:
        return self.get_username()


class AgentTokenAuthentication(authentication.BaseAuthentication):
    keyword = HEADER_KEYWORD

    def authenticate(self, request) -> tuple[AgentUser, AgentToken] | None:
        plaintext = header_token(request)
        if plaintext is None or not plaintext.startswith(TOKEN_SCHEME + "_"):
            return None  # not ours: let session auth or another token kind try
        token = token_authenticate(plaintext)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return AgentUser(host=token.host), token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when the credentials are missing or wrong.
        return self.keyword


class IsAgentToken(permissions.BasePermission):
    """Only an agent token may push samples: a CI token or a person's session gets 403."""

    message = (
        "Ingest takes an agent token (manage.py create_agent_token); this credential is not one."
    )

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, AgentToken)
