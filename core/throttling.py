"""Rate limits on the shared cache (Redis in production): DRF throttles, counted per credential.

Rates live in settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"] under a scope per endpoint
(`ingest`, `loadtests`, `gate`, `login`). Over the rate, DRF answers 429 with Retry-After.
"""

from __future__ import annotations

from django.http import HttpRequest
from rest_framework.throttling import ScopedRateThrottle, SimpleRateThrottle


class CredentialScopedThrottle(ScopedRateThrottle):
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


class LoginThrottle(SimpleRateThrottle):
    """Login attempts per client address (the login page is a Django view, not DRF's)."""

    scope = "login"

    def get_cache_key(self, request: HttpRequest, view) -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}
