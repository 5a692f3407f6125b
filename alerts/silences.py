"""Silences: created and expired (an expired silence is kept as history)."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone

from alerts.models import Silence
from dossiers.models import Team


def silence_create(
    *,
    team: Team,
    matchers: list[dict],
    starts_at: datetime,
    ends_at: datetime,
    comment: str,
    user=None,
) -> Silence:
    silence = Silence(
        team=team,
        matchers=matchers,
        starts_at=starts_at,
        ends_at=ends_at,
        comment=comment,
        created_by=user,
    )
    silence.full_clean()
    silence.save()
    return silence


def silence_expire(*, silence: Silence, now: datetime | None = None) -> Silence:
    """End a silence now (kept as history). A silence that has not started yet is cut to zero."""
    now = now or timezone.now()
    if silence.ends_at > now:
        silence.ends_at = max(now, silence.starts_at + timedelta(microseconds=1))
        silence.save(update_fields=["ends_at"])
    return silence
