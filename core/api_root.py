"""GET /api/v1/: what an agent author or a CI job finds when it asks the API's root.

The routes are read from the URL configuration at request time, so the list cannot fall
behind the routes; the parameters keep the OpenAPI spelling (`{slug}`) the docs use."""

from __future__ import annotations

import re

from django.urls import URLPattern, URLResolver, get_resolver, reverse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

API_VERSION = "v1"
PREFIX = f"api/{API_VERSION}/"


def _routes(patterns, prefix: str = "") -> list[str]:
    found: list[str] = []
    for pattern in patterns:
        route = prefix + str(pattern.pattern)
        if isinstance(pattern, URLResolver):
            found += _routes(pattern.url_patterns, route)
        elif isinstance(pattern, URLPattern):
            found.append(route)
    return found


def api_routes() -> list[str]:
    """Every path under /api/v1/ but the root itself, `<slug:slug>` written `{slug}`."""
    paths = {
        "/" + re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", route)
        for route in _routes(get_resolver().url_patterns)
        if route.startswith(PREFIX) and route != PREFIX
    }
    return sorted(paths)


class ApiRootView(APIView):
    """Open to anyone: it names routes, not data (each route keeps its own credentials)."""

    authentication_classes: list = []
    permission_classes: list = []

    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        return Response(
            {
                "version": API_VERSION,
                "docs": request.build_absolute_uri(reverse("api-docs")),
                "schema": request.build_absolute_uri(reverse("api-schema")),
                "contracts": "docs/contracts.md in the repository: payloads, commands, exit codes",
                "endpoints": api_routes(),
            }
        )
