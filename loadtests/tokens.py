"""CI tokens: issue (shown once), authenticate, revoke. Storage as core.credentials says."""

from __future__ import annotations

from datetime import datetime

from django.core.exceptions import ValidationError
from django.utils import timezone

from core.credentials import (
    digest_matches,
    token_digest,
    token_new,
    token_prefix,
    touch_last_used,
)
from dossiers.models import Service, Team
from loadtests.models import CIToken

TOKEN_SCHEME = "phc"


def ci_token_issue(
    *,
    service: Service | None = None,
    team: Team | None = None,
    label: str = "",
    can_import: bool = True,
    can_promote: bool = False,
    can_gate: bool = True,
    created_by=None,
) -> tuple[CIToken, str]:
    """A new token for one service, or (no service) every service of `team`; returns the row
    and the plaintext, which is never available again."""
    if service is not None:
        if team is not None and team.pk != service.team_id:
            raise ValidationError({"team": "The service belongs to another team."})
        team = service.team
    if team is None:
        raise ValidationError({"service": "Name a service, or a team for all its services."})
    if not (can_import or can_promote or can_gate):
        raise ValidationError("A CI token needs at least one permission.")
    prefix, plaintext = token_new(TOKEN_SCHEME)
    token = CIToken.objects.create(
        team=team,
        service=service,
        label=label[:100],
        prefix=prefix,
        digest=token_digest(plaintext),
        can_import=can_import,
        can_promote=can_promote,
        can_gate=can_gate,
        created_by=created_by if getattr(created_by, "pk", None) else None,
    )
    return token, plaintext


def ci_token_authenticate(plaintext: str, *, now: datetime | None = None) -> CIToken | None:
    """The active token matching `plaintext`, or None. Touches `last_used_at` once a minute."""
    prefix = token_prefix(plaintext, TOKEN_SCHEME)
    if prefix is None:
        return None
    token = (
        CIToken.objects.select_related("team", "service")
        .filter(prefix=prefix, revoked_at__isnull=True)
        .first()
    )
    if token is None or not digest_matches(token.digest, plaintext):
        return None
    touch_last_used(token, now or timezone.now())
    return token


def ci_token_revoke(*, token: CIToken, now: datetime | None = None) -> None:
    CIToken.objects.filter(pk=token.pk, revoked_at__isnull=True).update(
        revoked_at=now or timezone.now()
    )
    token.revoked_at = token.revoked_at or now or timezone.now()
