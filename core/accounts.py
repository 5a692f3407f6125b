"""The login page, with a small rate limit on attempts (DRF's throttle, on the shared cache)."""

from __future__ import annotations

import math

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse

from core.throttling import LoginThrottle


class LoginView(auth_views.LoginView):
    def post(self, request: HttpRequest, *args, **kwargs) -> HttpResponse:
        throttle = LoginThrottle()
        if not throttle.allow_request(request, self):
            wait = math.ceil(throttle.wait() or 1)
            # An unbound form: binding it would validate, i.e. try the password anyway.
            form = self.get_form_class()(
                request, initial={"username": request.POST.get("username")}
            )
            context = self.get_context_data(
                form=form, throttled=f"Too many login attempts: try again in {wait} s."
            )
            response = self.render_to_response(context, status=429)
            response["Retry-After"] = str(wait)
            return response
        return super().post(request, *args, **kwargs)
