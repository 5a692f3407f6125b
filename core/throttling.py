"""Rate limits: DRF throttles counted atomically in the shared cache (`core.ratelimit`).

Rates live in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] under a scope per endpoint
(`ingest`, `loadtests`, `gate`, `login`). Over the rate, DRF answers 429 with Retry-After.
Logins (every form that calls `authenticate()`, the admin's included) are counted by
`core.accounts.ThrottledModelBackend` with `login_attempt` below.
"""

from __future__ import annotations

import hashlib

from django.http import HttpRequest
from rest_framework.throttling import BaseThrottle, ScopedRateThrottle, SimpleRateThrottle

from core import ratelimit


class AtomicRateThrottle(SimpleRateThrottle):
    """SimpleRateThrottle's rates and keys, counted by `ratelimit.hit` (one atomic step)
    instead of reading and rewriting a history list, which concurrent requests race."""

    _wait: float | None = None

    def allow_request(self, request, view) -> bool:
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self._wait = ratelimit.hit(self.key, self.num_requests, self.duration)
        return self._wait is None

    def wait(self) -> float | None:
        return self._wait


class CredentialScopedThrottle(ScopedRateThrottle, AtomicRateThrottle):
    """The view's `throttle_scope`, counted per token (agent or CI), else per user, else per
    client address: one noisy credential cannot spend another's budget."""

    def get_cache_key(self, request, view) -> str:
        auth = request.auth
        if auth is not None and getattr(auth, "pk", None) is not None:
            ident = f"{auth._meta.label_lower}:{auth.pk}"
        elif request.user is not None and request.user.is_authenticated:
            ident = f"user:{request.user.pk}"
        else:
            ident = f"ip:{self.get_ident(request)}"
        return self.cache_format % {"scope": self.scope, "ident": ident}


class _LoginRate(AtomicRateThrottle):
    scope = "login"  # PERFHUB_THROTTLE_LOGIN, read as DRF reads every rate


def login_attempt(request: HttpRequest, username: str | None) -> float | None:
    """Count one login attempt against the client's address and against the account named
    (whether or not it exists); the seconds to wait when either is over the login rate.

    Both limits hold for every login form: a guesser rotating addresses still meets the
    account's limit, and one spraying many accounts meets the address's."""
    rate = _LoginRate()
    num, period = rate.num_requests, rate.duration
    ip = BaseThrottle().get_ident(request)
    wait = ratelimit.hit(f"login:ip:{ip}", num, period)
    if wait is None and username:
        account = hashlib.sha256(username.strip().casefold().encode()).hexdigest()[:32]
        wait = ratelimit.hit(f"login:account:{account}", num, period)
    return wait
