"""`Authorization: Token <agent token>` for DRF, resolving to the token's host.

Modelled on pretix's device auth: `request.user` is an `AgentUser` (authenticated, no
Django user behind it) and `request.auth` is the `AgentToken`, whose `.host` the views use.
A token of another kind (a CI token) is left to the next authentication class.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import permissions

from collectors.models import AgentToken, Host
from collectors.services.tokens import TOKEN_SCHEME, token_authenticate
from core.credentials import MachinePrincipal, SchemeTokenAuthentication


@dataclass(frozen=True)
class AgentUser(MachinePrincipal):
    """The principal behind an agent token: a host, not a person."""

    host: Host

    def get_username(self) -> str:
        return f"agent:{self.host.name}"


class AgentTokenAuthentication(SchemeTokenAuthentication):
    scheme = TOKEN_SCHEME

    def resolve(self, plaintext: str) -> tuple[AgentUser, AgentToken] | None:
        token = token_authenticate(plaintext)
        return None if token is None else (AgentUser(host=token.host), token)


class IsAgentToken(permissions.BasePermission):
    """Only an agent token may push samples: a CI token or a person's session gets 403."""

    message = (
        "Ingest takes an agent token (manage.py create_agent_token); this credential is not one."
    )

    def has_permission(self, request, view) -> bool:
        return isinstance(request.auth, AgentToken)
