"""Agent tokens: issued once, stored as a public prefix plus a SHA-256 of the whole token.

The plaintext looks like `pha_<prefix>_<secret>` (format and hashing: core.credentials).
Tokens issued before that were stored as an HMAC keyed with SECRET_KEY; they keep working:
the first use verifies the old HMAC (with SECRET_KEY or one of SECRET_KEY_FALLBACKS) and
re-stores the digest as SHA-256, after which SECRET_KEY no longer matters to them. Re-keying
without the plaintext is impossible (we never had it), hence rehash on use.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

from django.conf import settings
from django.utils import timezone

from collectors.models import AgentToken, Host
from core.credentials import (
    digest_matches,
    token_digest,
    token_new,
    token_prefix,
    touch_last_used,
)
from core.prepared import get_with_parent

TOKEN_SCHEME = "pha"


def token_issue(*, host: Host, label: str = "") -> tuple[AgentToken, str]:
    """A new token for `host`; the plaintext is returned here and never again."""
    prefix, plaintext = token_new(TOKEN_SCHEME)
    token = AgentToken.objects.create(
        host=host, prefix=prefix, digest=token_digest(plaintext), label=label
    )
    return token, plaintext


def token_issue_for_host_name(*, host_name: str, label: str = "") -> tuple[AgentToken, str]:
    host, _ = Host.objects.get_or_create(name=host_name)
    return token_issue(host=host, label=label)


def token_authenticate(plaintext: str, *, now: datetime | None = None) -> AgentToken | None:
    """The active token matching `plaintext`, or None. Touches `last_used_at` once a minute."""
    prefix = token_prefix(plaintext, TOKEN_SCHEME)
    if prefix is None:
        return None
    # Every push runs this: in SQL built once a process, not compiled by the ORM each time.
    token = get_with_parent(AgentToken, "host", "prefix", prefix, null=("revoked_at",))
    if token is None:
        return None
    if token.digest_kind == AgentToken.DigestKind.LEGACY_HMAC:
        if not _legacy_matches(token.digest, plaintext):
            return None
        _rehash(token, plaintext)
    elif not digest_matches(token.digest, plaintext):
        return None
    touch_last_used(token, now or timezone.now())
    return token


def _legacy_matches(stored: str, plaintext: str) -> bool:
    keys = [settings.SECRET_KEY, *getattr(settings, "SECRET_KEY_FALLBACKS", [])]
    return any(
        hmac.compare_digest(
            stored, hmac.new(key.encode(), plaintext.encode(), hashlib.sha256).hexdigest()
        )
        for key in keys
    )


def _rehash(token: AgentToken, plaintext: str) -> None:
    # Conditional on the old kind: two first uses at once write the same digest once.
    digest = token_digest(plaintext)
    AgentToken.objects.filter(pk=token.pk, digest_kind=AgentToken.DigestKind.LEGACY_HMAC).update(
        digest=digest, digest_kind=AgentToken.DigestKind.SHA256
    )
    token.digest, token.digest_kind = digest, AgentToken.DigestKind.SHA256


def token_revoke(*, token: AgentToken, now: datetime | None = None) -> None:
    AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=now or timezone.now()
    )
