"""REST endpoints: the agent push and the metrics read. Thin: parse, call one service or
selector, answer."""

from __future__ import annotations

import json

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import exceptions, parsers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from collectors import selectors
from collectors.authentication import IsAgentToken
from collectors.serializers import (
    IngestAcceptedSerializer,
    IngestBatchSerializer,
    IngestDuplicateSerializer,
    MetricsQuerySerializer,
    flatten_errors,
)
from collectors.services import ingest
from dossiers.models import Service
from dossiers.throttling import CredentialScopedThrottle


class PayloadTooLarge(exceptions.APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "Request body too large."
    default_code = "too_large"


class IngestJSONParser(parsers.JSONParser):
    """JSON with a size limit, and with NaN/Infinity let through to the serializer.

    Python's json accepts `NaN`; we keep it as a float so the field validator rejects it with
    the field's path (`requests[0].e2e_ms`) instead of a bare parse error.
    """

    def parse(self, stream, media_type=None, parser_context=None):
        limit = settings.PERFHUB_INGEST_MAX_BYTES
        request = (parser_context or {}).get("request")
        declared = request.META.get("CONTENT_LENGTH") if request is not None else None
        if declared and declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"Request body over {limit} bytes.")
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise PayloadTooLarge(f"Request body over {limit} bytes.")
        try:
            return json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from exc


class IngestView(APIView):
    # Every token kind is recognized (not sessions: no cookie pushes samples), so a CI token
    # is told 403 "not an agent token" rather than 401; the throttle counts per token.
    authentication_classes = [
        cls
        for cls in api_settings.DEFAULT_AUTHENTICATION_CLASSES
        if cls is not SessionAuthentication
    ]
    permission_classes = [IsAgentToken]
    parser_classes = [IngestJSONParser]
    throttle_classes = [CredentialScopedThrottle]
    throttle_scope = "ingest"

    @extend_schema(
        operation_id="ingest_batch",
        summary="Push an agent batch (GPU samples, engine scrapes, requests)",
        request=IngestBatchSerializer,
        responses={
            202: IngestAcceptedSerializer,
            200: OpenApiResponse(IngestDuplicateSerializer, "A replayed batch_id: nothing stored."),
            400: OpenApiResponse(OpenApiTypes.OBJECT, "Errors keyed by field path."),
            401: OpenApiResponse(description="Missing, invalid or revoked token."),
            403: OpenApiResponse(description="Another host's token, or not an agent token."),
            413: OpenApiResponse(description="Body over PERFHUB_INGEST_MAX_BYTES."),
            429: OpenApiResponse(description="Over the token's rate; see Retry-After."),
        },
    )
    def post(self, request: Request) -> Response:
        host = request.auth.host
        serializer = IngestBatchSerializer(data=request.data, context={"host": host})
        if not serializer.is_valid():
            return Response(flatten_errors(serializer.errors), status=status.HTTP_400_BAD_REQUEST)
        result = ingest.ingest_batch(host=host, data=serializer.validated_data, token=request.auth)
        if result.duplicate:
            return Response({"duplicate": True}, status=status.HTTP_200_OK)
        return Response(
            {"batch_id": str(result.batch_id), "counts": result.counts},
            status=status.HTTP_202_ACCEPTED,
        )


class ServiceMetricsView(APIView):
    """Session (browser, scripts logged in) or agent-token auth; any authenticated reader."""

    @extend_schema(
        operation_id="service_metrics",
        summary="A service's merged percentiles, rates, gauges and GPU series over a range",
        parameters=[
            OpenApiParameter(
                "start", OpenApiTypes.DATETIME, description="RFC 3339; default end - 1 h"
            ),
            OpenApiParameter("end", OpenApiTypes.DATETIME, description="RFC 3339; default now"),
            OpenApiParameter("hosts", OpenApiTypes.STR, description="Comma-separated host names"),
            OpenApiParameter("resolution", OpenApiTypes.INT, enum=[60, 300, 3600]),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    def get(self, request: Request, slug: str) -> Response:
        service = get_object_or_404(Service, slug=slug)
        query = MetricsQuerySerializer(data=request.query_params)
        if not query.is_valid():
            return Response(flatten_errors(query.errors), status=status.HTTP_400_BAD_REQUEST)
        metrics = selectors.service_metrics(service=service, **query.validated_data)
        return Response(metrics.to_dict())
