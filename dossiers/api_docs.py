"""The OpenAPI schema and its Redoc page: behind a login unless PERFHUB_PUBLIC_API_DOCS is set.

Redoc comes from drf-spectacular-sidecar's copy, served as a static file, in a page of our own
(drf-spectacular's template links web fonts from a CDN): nothing loads from a third party,
and no inline script, so the page keeps the site's CSP.
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView
from rest_framework.permissions import BasePermission


def docs_open_to(user) -> bool:
    return settings.PERFHUB_PUBLIC_API_DOCS or bool(user and user.is_authenticated)


class DocsReaders(BasePermission):
    message = "Log in (or send a token) to read the API schema."

    def has_permission(self, request, view) -> bool:
        return docs_open_to(request.user)


class ApiSchemaView(SpectacularAPIView):
    permission_classes = [DocsReaders]


class ApiDocsView(SpectacularRedocView):
    template_name = "api_docs.html"
    permission_classes = []

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        if not docs_open_to(request.user):
            return redirect_to_login(request.get_full_path())
        return super().get(request, *args, **kwargs)
