"""Rate limits under concurrency (issue 25): how many of a burst of attempts, raced by 16
threads on the shared Redis cache, pass a limit, with DRF's own throttle (reads its history
list, appends, writes it back) and with PerfHub's (`core.ratelimit`, one Lua script).

    REDIS_URL=redis://127.0.0.1:6379/1 .venv/bin/python bench/ratelimit_race.py

Uses keys under a random prefix in the Redis database of REDIS_URL; they expire in a minute.
Prints, per limit, the attempts let through by each; PerfHub's must equal the limit.
"""

from __future__ import annotations

import os
import sys
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "perfhub.settings")

CLIENTS = 16
LIMITS = {"gate": (30, 160), "loadtests": (60, 200), "ingest": (120, 400), "login": (10, 64)}


def race(throttle_class, scope: str, attempts: int) -> int:
    user = SimpleNamespace(is_authenticated=True, pk=uuid.uuid4().int)
    request = SimpleNamespace(auth=None, user=user, META={"REMOTE_ADDR": "192.0.2.1"})
    view = SimpleNamespace(throttle_scope=scope)
    barrier = threading.Barrier(CLIENTS)

    def client(_: int) -> int:
        barrier.wait()
        return sum(
            throttle_class().allow_request(request, view) for _ in range(attempts // CLIENTS)
        )

    with ThreadPoolExecutor(CLIENTS) as pool:
        return sum(pool.map(client, range(CLIENTS)))


def main() -> None:
    if not os.environ.get("REDIS_URL"):
        sys.exit("REDIS_URL is required: the race is about the shared cache")
    import django

    django.setup()
    from django.conf import settings
    from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle

    from core.throttling import CredentialScopedThrottle

    settings.CACHES["default"]["KEY_PREFIX"] = f"bench-{uuid.uuid4().hex[:8]}"
    SimpleRateThrottle.THROTTLE_RATES = {s: f"{n}/min" for s, (n, _) in LIMITS.items()}
    for scope, (limit, attempts) in LIMITS.items():
        drf = race(ScopedRateThrottle, scope, attempts)
        ours = race(CredentialScopedThrottle, scope, attempts)
        print(f"{scope:10} limit {limit:4}/min, {attempts} attempts by {CLIENTS} threads: "
              f"DRF's throttle let {drf} through, PerfHub's {ours}")  # fmt: skip


if __name__ == "__main__":
    main()
