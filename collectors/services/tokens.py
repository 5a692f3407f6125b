"""Agent tokens: issued once, stored as a public prefix plus an HMAC of the whole token.

The plaintext looks like `pha_<prefix>_<secret>`. The prefix finds the row; the HMAC
(SHA-256, keyed with SECRET_KEY) proves the secret without the database ever holding it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from collectors.models import AgentToken, Host

TOKEN_SCHEME = "pha"
LAST_USED_PRECISION = timedelta(minutes=1)


def _digest(plaintext: str) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), plaintext.encode(), hashlib.sha256).hexdigest()


def token_issue(*, host: Host, label: str = "") -> tuple[AgentToken, str]:
    """A new token for `host`; the plaintext is returned here and never again."""
    prefix = secrets.token_hex(4)
    plaintext = f"{TOKEN_SCHEME}_{prefix}_{secrets.token_urlsafe(32)}"
    token = AgentToken.objects.create(
        host=host, prefix=prefix, digest=_digest(plaintext), label=label
    )
    return token, plaintext


def token_issue_for_host_name(*, host_name: str, label: str = "") -> tuple[AgentToken, str]:
    host, _ = Host.objects.get_or_create(name=host_name)
    return token_issue(host=host, label=label)


def token_authenticate(plaintext: str, *, now: datetime | None = None) -> AgentToken | None:
    """The active token matching `plaintext`, or None. Touches `last_used_at` once a minute."""
    scheme, _, rest = plaintext.partition("_")
    prefix, _, secret = rest.partition("_")
    if scheme != TOKEN_SCHEME or not prefix or not secret:
        return None
    token = (
        AgentToken.objects.select_related("host")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )
    if token is None or not hmac.compare_digest(token.digest, _digest(plaintext)):
        return None
    _touch(token, now or timezone.now())
    return token


def _touch(token: AgentToken, now: datetime) -> None:
    # A conditional update: at most one write a minute per token, whatever the push rate.
    if token.last_used_at and now - token.last_used_at < LAST_USED_PRECISION:
        return
    AgentToken.objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - LAST_USED_PRECISION)
    ).update(last_used_at=now)
    token.last_used_at = now


def token_revoke(*, token: AgentToken, now: datetime | None = None) -> None:
    AgentToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=now or timezone.now()
    )
