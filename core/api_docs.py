"""The OpenAPI schema and its docs page: behind a login unless PERFHUB_PUBLIC_API_DOCS is set.

Swagger UI comes from drf-spectacular-sidecar's copy, served as a static file, and its
start-up script from a URL of its own (drf-spectacular's "split" view), not inline: nothing
loads from a third party and the page keeps the site's CSP. (Redoc was tried first: its
bundle loads a logo from its CDN, which the CSP rightly blocks.)
"""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.permissions import BasePermission


def docs_open_to(user) -> bool:
    return settings.PERFHUB_PUBLIC_API_DOCS or bool(user and user.is_authenticated)


class DocsReaders(BasePermission):
    message = "Log in (or send a token) to read the API schema."

    def has_permission(self, request, view) -> bool:
        return docs_open_to(request.user)


class ApiSchemaView(SpectacularAPIView):
    permission_classes = [DocsReaders]


class ApiDocsView(SpectacularSwaggerSplitView):
    permission_classes = []

    @extend_schema(exclude=True)
    def get(self, request, *args, **kwargs):
        if not docs_open_to(request.user):
            return redirect_to_login(request.get_full_path())
        return super().get(request, *args, **kwargs)
