"""GET /api/v1/services/<slug>/plan/: the capacity plan as `manage.py plan_capacity --json`.

Query: `slo` (repeatable, `ttft_p99_ms=500`), `load` or `growth`, `headroom`,
`at_concurrency` or `at_rate`, `sweep` (a run id: plan from the sweep holding it). Answers 200
with the plan, 400 `{"detail": ...}` naming the bad field, 404 unknown service, 422
`{"detail": ...}` when the service has no usable sweep (or none holding that run).
Who reads: a logged-in user (as the pages), or a CI token scoped to the service (or its
team); an agent token, or a CI token of another service, is refused (403 saying why).
"""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response
from rest_framework.views import APIView

from dossiers.models import Service
from loadtests.models import CIToken
from planning.inputs import PlanInputError, plan_inputs
from planning.plan import PlanError, plan_for


class PlanView(APIView):
    @extend_schema(
        parameters=[
            OpenApiParameter("slo", str, many=True, description="e.g. ttft_p99_ms=500"),
            OpenApiParameter("load", float, description="requests/s to plan for"),
            OpenApiParameter("growth", float, description="factor on the live peak"),
            OpenApiParameter("headroom", float, description="share of a replica kept free"),
            OpenApiParameter("at_concurrency", float),
            OpenApiParameter("at_rate", float),
            OpenApiParameter("sweep", int, description="a run id: plan from its sweep"),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def get(self, request, slug: str) -> Response:
        service = get_object_or_404(Service, slug=slug)
        _authorize(request, service)
        try:
            options = plan_inputs(request.query_params)
        except PlanInputError as exc:
            return Response({"detail": str(exc)}, status=400)
        try:
            plan = plan_for(service, **options)
        except PlanError as exc:
            return Response({"detail": str(exc)}, status=422)
        return Response(plan.to_dict(absolute_url=request.build_absolute_uri))


def _authorize(request, service: Service) -> None:
    auth = request.auth
    if auth is None:
        return  # a session: every logged-in user reads plans, as the pages
    if not isinstance(auth, CIToken):
        raise PermissionDenied(
            "Agent tokens only push metrics; read plans with a session or a CI token."
        )
    if reason := auth.refusal(service, None):  # any permission reads, in scope
        raise PermissionDenied(reason)
