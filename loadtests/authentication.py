"""`Authorization: Token phc_...` for DRF: a CI token, resolving to a `CIUser`.

Like an agent token, the principal is no person: `request.user` is a `CIUser` and
`request.auth` the `CIToken`, whose scope and permissions the load-test API checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.credentials import MachinePrincipal, SchemeTokenAuthentication
from loadtests.models import CIToken
from loadtests.tokens import TOKEN_SCHEME, ci_token_authenticate


@dataclass(frozen=True)
class CIUser(MachinePrincipal):
    token: CIToken

    def get_username(self) -> str:
        return f"ci:{self.token.prefix}"


class CITokenAuthentication(SchemeTokenAuthentication):
    scheme = TOKEN_SCHEME

    def resolve(self, plaintext: str) -> tuple[CIUser, CIToken] | None:
        token = ci_token_authenticate(plaintext)
        return None if token is None else (CIUser(token=token), token)
