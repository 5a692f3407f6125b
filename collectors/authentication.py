"""`Authorization: Token <agent token>` for DRF, resolving to the token's host.

Modelled on pretix's device auth: `request.user` is an `AgentUser` (authenticated, no
Django user behind it) and `request.auth` is the `AgentToken`, whose `.host` the views use.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions

from collectors.models import AgentToken, Host
from collectors.services.tokens import token_authenticate


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
    keyword = "Token"

    def authenticate(self, request) -> tuple[AgentUser, AgentToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None  # not ours: let session auth try
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Token header must be 'Token <token>'.")
        try:
            plaintext = header[1].decode()
        except UnicodeError as exc:
            raise exceptions.AuthenticationFailed("Token contains invalid characters.") from exc
        token = token_authenticate(plaintext)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return AgentUser(host=token.host), token

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when the credentials are missing or wrong.
        return self.keyword
