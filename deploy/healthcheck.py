"""Compose's health checks, one per kind of process (see docker-compose.yml).

    python deploy/healthcheck.py http://127.0.0.1:8000/readyz   # web: the URL answers 200
    python deploy/healthcheck.py beat                           # beat: its heartbeat is recent

Exit 0 when healthy, 1 (with one line saying why) when not. The web check sends the first of
ALLOWED_HOSTS as Host, so it passes Django's host check whatever name the site is served under.
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT_S = 5


def check_url(url: str) -> str | None:
    hosts = [h.strip() for h in os.environ.get("ALLOWED_HOSTS", "").split(",") if h.strip()]
    headers = {"Host": hosts[0].lstrip(".")} if hosts and hosts[0] != "*" else {}
    try:
        request = urllib.request.Request(url, headers=headers)
        with urllib.request.urlopen(request, timeout=TIMEOUT_S):
            return None
    except urllib.error.HTTPError as exc:
        return f"{url} answered {exc.code}: {exc.read(500).decode(errors='replace')}"
    except OSError as exc:
        return f"{url}: {exc}"


def check_beat() -> str | None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")
    import django

    django.setup()
    from perfhub.health import check_beat

    result = check_beat()
    return None if result.ok else f"beat: {result.detail}"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    problem = check_beat() if argv[0] == "beat" else check_url(argv[0])
    if problem:
        print(problem, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
