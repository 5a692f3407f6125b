"""Machine credentials: one token format and one way to store it, for agent and CI tokens.

A token reads `<scheme>_<prefix>_<secret>` (`pha_` agent, `phc_` CI). The public prefix finds
the row; the database keeps a plain SHA-256 of the whole token. The secret carries 256 bits
of randomness, so there is no dictionary to try and a slow or keyed hash adds nothing; not
keying it with SECRET_KEY means rotating that key revokes no token.

Both collectors (agent tokens) and loadtests (CI tokens) import this module, which is why it
lives in dossiers, the lowest Django app either may import.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.db.models import Model, Q
from rest_framework import authentication, exceptions

LAST_USED_PRECISION = timedelta(minutes=1)
HEADER_KEYWORD = "Token"


def token_new(scheme: str) -> tuple[str, str]:
    """(prefix, plaintext) for a new token of `scheme`; show the plaintext once, keep neither."""
    prefix = secrets.token_hex(4)
    return prefix, f"{scheme}_{prefix}_{secrets.token_urlsafe(32)}"


def token_digest(plaintext: str) -> str:
    return hashlib.sha256(plaintext.encode()).hexdigest()


def token_prefix(plaintext: str, scheme: str) -> str | None:
    """The prefix of a well-formed token of `scheme`, else None."""
    head, _, rest = plaintext.partition("_")
    prefix, _, secret = rest.partition("_")
    if head != scheme or not prefix or not secret:
        return None
    return prefix


def digest_matches(stored: str, plaintext: str) -> bool:
    return hmac.compare_digest(stored, token_digest(plaintext))


def touch_last_used(token: Model, now: datetime) -> None:
    """Record the use at most once a minute per token, whatever the request rate.

    A conditional UPDATE, so concurrent requests write it once; `token.last_used_at` follows.
    """
    last = token.last_used_at
    if last is not None and now - last < LAST_USED_PRECISION:
        return
    type(token).objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_PRECISION)
    ).update(last_used_at=now)
    token.last_used_at = now


def header_token(request) -> str | None:
    """The plaintext of an `Authorization: Token <token>` header, None without one."""
    header = authentication.get_authorization_header(request).split()
    if not header or header[0].lower() != HEADER_KEYWORD.lower().encode():
        return None
    if len(header) != 2:
        raise exceptions.AuthenticationFailed("Token header must be 'Token <token>'.")
    try:
        return header[1].decode()
    except UnicodeError as exc:
        raise exceptions.AuthenticationFailed("Token contains invalid characters.") from exc


class UnrecognizedTokenAuthentication(authentication.BaseAuthentication):
    """Last in the chain: a `Token` header no credential kind recognized is refused (401),
    rather than treated as no credentials at all."""

    def authenticate(self, request):
        if header_token(request) is not None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return None

    def authenticate_header(self, request) -> str:
        return HEADER_KEYWORD


class MachinePrincipal:
    """What `request.user` is for a machine credential: authenticated, no Django user behind
    it, never staff. Subclasses (dataclasses) hold what the credential stands for."""

    is_authenticated = True
    is_anonymous = False
    is_superuser = False
    is_staff = False
    pk = None

    def get_username(self) -> str:
        raise NotImplementedError

    def __str__(self) -> str:
        return self.get_username()


class SchemeTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Token <scheme>_...` for one kind of machine token. A token of another
    scheme is left to the next authentication class; a wrong one of this scheme is refused."""

    keyword = HEADER_KEYWORD
    scheme: str

    def resolve(self, plaintext: str) -> tuple[MachinePrincipal, Model] | None:
        """(principal, token) for a valid token, else None."""
        raise NotImplementedError

    def authenticate(self, request):
        plaintext = header_token(request)
        if plaintext is None or not plaintext.startswith(self.scheme + "_"):
            return None
        found = self.resolve(plaintext)
        if found is None:
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        return found

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when the credentials are missing or wrong.
        return self.keyword
