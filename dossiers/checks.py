"""System checks: a demo password that still logs in fails `check --deploy`; a malformed
outbound allow-list fails every check."""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.checks import Error, Tags, register
from django.db import DatabaseError

from dossiers import demo

DEMO_LOGINS = {demo.DEMO_USERNAME: demo.DEMO_PASSWORD, demo.ADMIN_USERNAME: demo.ADMIN_PASSWORD}


@register(Tags.security, deploy=True)
def check_demo_passwords(app_configs=None, **kwargs) -> list[Error]:
    try:
        users = list(get_user_model().objects.filter(username__in=DEMO_LOGINS, is_active=True))
    except DatabaseError:  # no database yet (first deploy, before migrate): nothing to check
        return []
    return [
        Error(
            f"The demo user {user.username!r} still logs in with its published password.",
            hint=f"Change its password or deactivate it: manage.py changepassword {user.username}",
            obj=user.username,
            id="perfhub.E001",
        )
        for user in users
        if user.check_password(DEMO_LOGINS[user.username])
    ]


@register(Tags.security)
def check_outbound_allow_list(app_configs=None, **kwargs) -> list[Error]:
    """Each PERFHUB_OUTBOUND_ALLOW_CIDRS entry must be a CIDR block (else every call fails)."""
    errors = []
    for entry in settings.PERFHUB_OUTBOUND_ALLOW_CIDRS:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError as exc:
            errors.append(
                Error(
                    f"PERFHUB_OUTBOUND_ALLOW_CIDRS: {entry!r} is not a CIDR block ({exc}).",
                    hint="Comma-separated blocks such as 10.20.0.0/16,fd00::/8.",
                    id="perfhub.E002",
                )
            )
    return errors
