"""Where the demo's alerts go: one email receiver per demo team, its mail written to files.

A demo whose critical alert notifies no one teaches the wrong thing. `seed_demo` gives every team
an on-call receiver (`ensure_demo_receivers`); `run_demo` points Django's mail at a folder under
the var directory (`demo_mail_dir`) when no mail backend was configured, so each notification
is a file a reader can open, and the alert page lists it as sent to that receiver.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings

from alerts.models import Receiver
from dossiers.models import Team

DEMO_RECEIVER = "Demo on-call (email to var/demo-mail/)"
CONSOLE_BACKEND = "django.core.mail.backends.console.EmailBackend"


def ensure_demo_receivers(teams: list[Team]) -> int:
    """An email receiver for each team that has none yet; returns how many were added."""
    added = 0
    for team in teams:
        if team.alert_receivers.exists():
            continue
        Receiver.objects.create(
            team=team,
            name=DEMO_RECEIVER,
            kind="email",
            emails=f"oncall@{team.slug}.demo.invalid",
        )
        added += 1
    return added


def demo_mail_dir() -> Path | None:
    """Send the demo's mail to files under the var directory, unless a mail backend other than
    the console default is configured (then it is left alone); returns the folder, if so."""
    if settings.EMAIL_BACKEND != CONSOLE_BACKEND:
        return None
    folder = Path(settings.VAR_DIR) / "demo-mail"
    folder.mkdir(parents=True, exist_ok=True)
    settings.EMAIL_BACKEND = "django.core.mail.backends.filebased.EmailBackend"
    settings.EMAIL_FILE_PATH = str(folder)
    return folder
