"""`Authorization: Token phc_...` for DRF: a CI token, resolving to a `CIUser`.

Like an agent token, the principal is no person: `request.user` is a `CIUser` and
`request.auth` the `CIToken`, whose scope and permissions the load-test API checks.
"""

from __future__ import annotations

from dataclasses import dataclass

from rest_framework import authentication, exceptions

from dossiers.credentials import HEADER_KEYWORD, header_token
from loadtests.models import CIToken
from loadtests.tokens import TOKEN_SCHEME, ci_token_authenticate


@dataclass(frozen=True)
class CIUser:
    token: CIToken
    is_authenticated: bool = True
    is_anonymous: bool = False
    is_superuser: bool = False
    is_staff: bool = False
    pk: None = None

    def get_username(self) -> str:
        return f"ci:{self.token.prefix}"

    def __str__(self) -> str:
        return self.get_username()


class CITokenAuthentication(authentication.BaseAuthentication):
    keyword = HEADER_KEYWORD

    def authenticate(self, request) -> tuple[CIUser, CIToken] | None:
        plaintext = header_token(request)
        if plaintext is None or not plaintext.startswith(TOKEN_SCHEME + "_"):
            return None
        token = ci_token_authenticate(plaintext)
        if token is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return CIUser(token=token), token

    def authenticate_header(self, request) -> str:
        return self.keyword
