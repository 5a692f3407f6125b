"""Logins: every attempt counted (per client address and per account) before any password is
checked, whichever form sends it: the login page, the admin's, anything calling authenticate().

`ThrottledModelBackend` counts the attempt (`core.throttling.login_attempt`) and, over the
limit, stops authentication before the password is tried. The forms then say why, and
`LoginThrottleMiddleware` turns the answer into 429 with Retry-After.
"""

from __future__ import annotations

import math

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import get_user_model
from django.contrib.auth import views as auth_views
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse

from core.throttling import login_attempt

THROTTLED_ATTR = "perfhub_login_wait"


class ThrottledModelBackend(ModelBackend):
    """Django's ModelBackend behind the login limit. authenticate() treats PermissionDenied as
    "stop, nobody logs in", so no later backend tries the password either."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is not None:
            if username is None:
                username = kwargs.get(get_user_model().USERNAME_FIELD)
            wait = login_attempt(request, username)
            if wait is not None:
                setattr(request, THROTTLED_ATTR, math.ceil(wait))
                raise PermissionDenied("too many login attempts")
        return super().authenticate(request, username=username, password=password, **kwargs)


def _throttled_error(form) -> ValidationError | None:
    wait = getattr(form.request, THROTTLED_ATTR, None) if form.request is not None else None
    if wait is None:
        return None
    return ValidationError(
        "Too many login attempts: try again in %(wait)s s.", code="throttled",
        params={"wait": wait},
    )  # fmt: skip


class ThrottledAuthenticationForm(AuthenticationForm):
    def get_invalid_login_error(self) -> ValidationError:
        return _throttled_error(self) or super().get_invalid_login_error()


class ThrottledAdminAuthenticationForm(AdminAuthenticationForm):
    def get_invalid_login_error(self) -> ValidationError:
        return _throttled_error(self) or super().get_invalid_login_error()


class LoginView(auth_views.LoginView):
    authentication_form = ThrottledAuthenticationForm


class LoginThrottleMiddleware:
    """A request whose login attempt was over the limit is answered 429 + Retry-After,
    whichever view rendered it."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        wait = getattr(request, THROTTLED_ATTR, None)
        if wait is not None and response.status_code < 300:
            response.status_code = 429
            response["Retry-After"] = str(max(int(wait), 1))
        return response
