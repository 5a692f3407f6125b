"""REST endpoints: the agent push and the metrics read. Thin: parse, call one service or
selector, answer."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import parsers, status
from rest_framework.authentication import SessionAuthentication
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings
from rest_framework.views import APIView

from collectors import decoding, selectors, storage
from collectors.authentication import IsAgentToken
from collectors.serializers import (
    IngestAcceptedSerializer,
    IngestBatchSerializer,
    IngestDuplicateSerializer,
    MetricsQuerySerializer,
)
from collectors.services import ingest
from core.api import DetailSerializer, flatten_errors, read_limited
from core.throttling import CredentialScopedThrottle
from dossiers.models import Service

# The batch field whose rows named a deleted key (`storage.OrphanRows.field`).
ORPHAN_FIELDS = {
    "RequestSample.service": "requests",
    "RequestSample.host": "host",
    "GpuSample.host": "host",
    "ScrapeWindow.service": "scrapes",
    "ScrapeWindow.host": "host",
}


class IngestThrottle(CredentialScopedThrottle):
    """PERFHUB_INGEST_RATE pushes per host, counted in the shared cache (Redis in production,
    so across server processes). An agent token belongs to one host: counting per host keeps
    a host that holds two tokens (during a rotation) to one budget. Any other credential the
    view lets through is counted per credential, as elsewhere."""

    def get_rate(self) -> str | None:
        return settings.PERFHUB_INGEST_RATE or None

    def get_cache_key(self, request, view) -> str | None:
        host_id = getattr(request.auth, "host_id", None)
        if host_id is None:
            return super().get_cache_key(request, view)
        return self.cache_format % {"scope": self.scope, "ident": f"host:{host_id}"}


class RawBody:
    """A request body handed over once. DRF keeps `request.data` as long as its request object
    lives, and Django's request sits in reference cycles, so that is until the next full
    garbage collection: a worker held every ~100 kB body until then, and grew ~2 MiB a
    million samples between them. The view takes the bytes out; they go when it is done."""

    __slots__ = ("_raw",)

    def __init__(self, raw: bytes) -> None:
        self._raw = raw

    def take(self) -> bytes:
        raw, self._raw = self._raw, b""
        return raw


class IngestBodyParser(parsers.BaseParser):
    """The raw JSON body, read up to PERFHUB_INGEST_MAX_BYTES (counted while reading, chunked
    or not); `collectors.decoding` decodes and validates it in one pass."""

    media_type = "application/json"

    def parse(self, stream, media_type=None, parser_context=None) -> RawBody:
        return RawBody(read_limited(stream, settings.PERFHUB_INGEST_MAX_BYTES) if stream else b"")


class IngestView(APIView):
    # Every token kind is recognized (not sessions: no cookie pushes samples), so a CI token
    # is told 403 "not an agent token" rather than 401.
    authentication_classes = [
        cls
        for cls in api_settings.DEFAULT_AUTHENTICATION_CLASSES
        if cls is not SessionAuthentication
    ]
    permission_classes = [IsAgentToken]
    parser_classes = [IngestBodyParser]
    throttle_classes = [IngestThrottle]
    throttle_scope = "ingest"

    @extend_schema(
        operation_id="ingest_batch",
        summary="Push an agent batch (GPU samples, engine scrapes, requests)",
        request=IngestBatchSerializer,
        responses={
            202: IngestAcceptedSerializer,
            200: OpenApiResponse(IngestDuplicateSerializer, "A replayed batch_id: nothing stored."),
            400: OpenApiResponse(OpenApiTypes.OBJECT, "Errors keyed by field path."),
            401: OpenApiResponse(DetailSerializer, "Missing, invalid or revoked token."),
            403: OpenApiResponse(DetailSerializer, "Another host's token, or not an agent token."),
            409: OpenApiResponse(OpenApiTypes.OBJECT, "The host was deleted meanwhile."),
            413: OpenApiResponse(DetailSerializer, "Body over PERFHUB_INGEST_MAX_BYTES."),
            429: OpenApiResponse(
                DetailSerializer, "Over the host's or token's rate (Retry-After)."
            ),
        },
    )
    def post(self, request: Request) -> Response:
        host = request.auth.host
        body = request.data
        raw = body.take() if isinstance(body, RawBody) else b""  # no body: {} -> 400
        data = decoding.validate_body(raw, host=host)
        try:
            result = ingest.ingest_batch(host=host, data=data, token=request.auth)
        except storage.OrphanRows as exc:
            # A service (or the host) named by the batch was deleted after it was validated:
            # nothing is stored; the agent's next batch is validated afresh.
            return Response(
                {ORPHAN_FIELDS.get(exc.field, "batch"): [f"{exc}: deleted while storing"]},
                status=status.HTTP_409_CONFLICT,
            )
        if result.duplicate:
            return Response({"duplicate": True}, status=status.HTTP_200_OK)
        answer = {"batch_id": str(result.batch_id), "counts": result.counts}
        if result.warnings:
            answer["warnings"] = result.warnings
        return Response(answer, status=status.HTTP_202_ACCEPTED)


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
        responses={
            200: OpenApiTypes.OBJECT,
            400: OpenApiResponse(OpenApiTypes.OBJECT, "Errors keyed by parameter."),
            401: OpenApiResponse(DetailSerializer, "Not logged in, no valid token."),
            404: OpenApiResponse(DetailSerializer, "No service with this slug."),
        },
    )
    def get(self, request: Request, slug: str) -> Response:
        service = get_object_or_404(Service, slug=slug)
        query = MetricsQuerySerializer(data=request.query_params)
        if not query.is_valid():
            return Response(flatten_errors(query.errors), status=status.HTTP_400_BAD_REQUEST)
        metrics = selectors.service_metrics(service=service, **query.validated_data)
        return Response(metrics.to_dict())
