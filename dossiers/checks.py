"""System checks: a demo password that still logs in fails `check --deploy`, and a SITE_URL
no reader can open warns there; a malformed outbound allow-list fails every check."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.checks import Error, Tags, Warning, register
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


@register(deploy=True)
def check_site_url(app_configs=None, **kwargs) -> list[Warning]:
    """SITE_URL is where the links PerfHub sends out lead (alert notifications, webhooks, the
    exported dossier's live pages): on a deployment, loopback is nobody's PerfHub."""
    parts = urlsplit(settings.SITE_URL)
    host = parts.hostname or ""
    if parts.scheme not in ("http", "https") or not host:
        problem = "is not an http(s) address"
    elif host == "localhost" or _is_loopback(host):
        problem = "points at the server's own loopback"
    else:
        return []
    return [
        Warning(
            f"SITE_URL {settings.SITE_URL!r} {problem}: the links in alert notifications "
            "and exported dossiers lead nowhere for the people who read them.",
            hint="Set SITE_URL to the address people open PerfHub at, "
            "e.g. https://perfhub.example.com.",
            id="perfhub.W001",
        )
    ]


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name
        return False
