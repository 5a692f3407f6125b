"""/api/v1/services/<slug>/loadtests/ and /gate/: import a load-test file, run the release gate.

Both take the file either as multipart (`file`, plus optional `format`, `baseline`, `run`
fields) or as the raw request body (JSON or JSON lines; options in the query string).
Authentication: a CI token (scoped to the service or its team, with the permission to import,
to promote for `baseline=true`, or to run the gate), or a session of a member of the service's
team. Agent tokens are refused (403, saying why): they only push metrics. The CI token that
made a write is recorded on the runs, the gate run and the baseline promotion.

Answers, loadtests/: 201 with the runs stored (200 when the same file was imported before),
400 `{"detail": "<parser message naming the key or line>"}`, 403, 404 unknown service,
413 over the size limit, 429 over the token's rate (with Retry-After).
Answers, gate/: 200 with the verdict ("pass" or "regression") and the table; 422 when the gate
refuses to compare (no baseline, another workload shape: the body has `reasons`), so a CI step
can tell "regressed" (200 + verdict) from "could not judge" (422) from "bad file" (400).
The gate takes several `file` parts (multipart) as the repeats of one build, judged together
against the baseline set of their workload shape.
"""

from __future__ import annotations

from types import SimpleNamespace

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from core.throttling import CredentialScopedThrottle
from dossiers.models import Service
from loadtests import formats
from loadtests.gate import GateInputError, current_reference, reference_leavers, run_gate
from loadtests.importing import (
    MAX_FILE_BYTES,
    MAX_UPLOAD_FILES,
    LoadTestImportError,
    MeasuredAtError,
    check_measured_at_value,
    filled_in_notes,
    import_loadtest_files,
)
from loadtests.models import CIToken, GateRun, LoadTest

MAX_GATE_FILES = 20  # repeats of one build in one gate run


class LoadTestSerializer(serializers.ModelSerializer):
    """A stored run: its numbers, `lint` (findings: check, severity warn / refuse, message,
    fix, evidence), `refusing` (whether a finding keeps it from becoming a baseline) and its
    workload `fingerprint`."""

    url = serializers.SerializerMethodField()
    refusing = serializers.SerializerMethodField()
    created = serializers.SerializerMethodField()
    baseline = serializers.SerializerMethodField()
    sources = serializers.SerializerMethodField()

    class Meta:
        model = LoadTest
        exclude = ["service", "imported_by", "ci_token", "extra", "content_sha256"]

    def get_url(self, run: LoadTest) -> str:
        request = self.context.get("request")
        url = run.get_absolute_url()
        return request.build_absolute_uri(url) if request else url

    def get_refusing(self, run: LoadTest) -> bool:
        return bool(run.refusing_findings)

    def get_created(self, run: LoadTest) -> bool:
        return getattr(run, "just_created", False)

    def get_sources(self, run: LoadTest) -> dict[str, str]:
        """Which key of the file each number came from."""
        return (run.extra or {}).get("sources", {})

    def get_baseline(self, run: LoadTest) -> int | None:
        baseline = run.promoted_to
        return baseline.pk if baseline is not None else None


class OptionsSerializer(serializers.Serializer):
    format = serializers.CharField(required=False, max_length=20)
    measured_at = serializers.DateTimeField(required=False)
    baseline = serializers.BooleanField(required=False, default=False)
    run = serializers.IntegerField(required=False, min_value=1)
    override_lint = serializers.CharField(
        required=False,
        allow_blank=True,
        max_length=500,
        help_text="With baseline=true: promote despite refusing lint findings, for this reason.",
    )

    def validate_format(self, value: str) -> str:
        # The registry, read per request: a format registered at run time is accepted too.
        if value not in formats.format_names():
            raise serializers.ValidationError(
                f"unknown format {value!r}: expected one of {', '.join(formats.format_names())}"
            )
        return value

    def validate_measured_at(self, value):
        try:
            return check_measured_at_value(value)
        except MeasuredAtError as exc:
            raise serializers.ValidationError(str(exc)) from exc


_FILE_BODY = {
    "multipart/form-data": {
        "type": "object",
        "properties": {
            "file": {
                "type": "array",
                "items": {"type": "string", "format": "binary"},
                "description": "One or more result files (a sweep's stages, one file each), "
                "or a results folder as .zip or .tar.gz: every run of every file is stored, "
                "or none.",
            }
        },
        "required": ["file"],
    },
    "application/json": OpenApiTypes.OBJECT,
}
_OPTIONS = [
    OpenApiParameter("format", str, enum=list(formats.format_names())),
    OpenApiParameter(
        "measured_at",
        OpenApiTypes.DATETIME,
        description="When the run was measured, for files that carry no time (GenAI-Perf). "
        "Without it such runs are stored as 'date unknown'.",
    ),
    OpenApiParameter("baseline", bool, description="Promote the imported run to baseline."),
    OpenApiParameter("run", int, description="With several runs in one file: which (1-based)."),
    OpenApiParameter(
        "override_lint",
        str,
        description="With baseline=true: the reason to promote despite refusing lint findings "
        "(recorded on the run and the dossier timeline).",
    ),
]


class _FormatIsOurs(DefaultContentNegotiation):
    """`?format=` names the load-test format here, not DRF's renderer override (which answered
    404 to `?format=vllm-bench`); the answer is always JSON."""

    settings = SimpleNamespace(URL_FORMAT_OVERRIDE=None)


AGENT_TOKEN_REFUSED = (
    "Agent tokens only push metrics (POST /api/v1/ingest/). Load tests and the gate take a CI "
    "token scoped to the service (manage.py create_ci_token, or the service's CI tokens page) "
    "or a team member's session."
)


def authorize(request, service: Service, action: str | None) -> None:
    """403 unless the request's credential may do `action` (CIToken.Action) on `service`: a CI
    token in scope with that permission, or a session of a member of the service's team.
    `action` None is reading: a CI token in scope with any permission, or any session (every
    logged-in user reads the dossiers)."""
    auth = request.auth
    if isinstance(auth, CIToken):
        if reason := auth.refusal(service, action):
            raise PermissionDenied(reason)
    elif auth is not None:
        raise PermissionDenied(AGENT_TOKEN_REFUSED)
    elif action is not None and not service.can_edit(request.user):
        raise PermissionDenied("Only members of the service's team post its load tests.")


class CIEndpoint(APIView):
    """An endpoint of a service for CI tokens and team members: reads the service the URL
    names and checks the credential may do `action` on it; counts requests per credential
    (429 with Retry-After over the rate)."""

    throttle_classes = [CredentialScopedThrottle]
    action: str

    def initial(self, request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)
        # Before anything else is read: an agent token learns at once that it has no place here.
        if request.auth is not None and not isinstance(request.auth, CIToken):
            raise PermissionDenied(AGENT_TOKEN_REFUSED)

    def service(self, request, slug: str, *, reading: bool = False) -> Service:
        """The service the URL names, once the credential may do the endpoint's action on it
        (`reading`: may read it)."""
        service = get_object_or_404(Service.objects.select_related("team"), slug=slug)
        authorize(request, service, None if reading else self.action)
        return service

    @staticmethod
    def ci_token(request) -> CIToken | None:
        return request.auth if isinstance(request.auth, CIToken) else None


class _FileEndpoint(CIEndpoint):
    """A CI endpoint that reads an upload (multipart or raw body)."""

    content_negotiation_class = _FormatIsOurs

    def upload(
        self, request, limit: int, what: str
    ) -> tuple[list[tuple[bytes, str | None]], dict, Response | None]:
        """(files, options, error response): every `file` part of a multipart request, at most
        `limit` of them, each read once; or the raw body as one unnamed file."""
        if request.content_type.startswith("multipart/form-data"):
            uploads = request.FILES.getlist("file")
            if not uploads:
                return [], {}, Response({"file": ["No file was submitted."]}, 400)
            if len(uploads) > limit:
                return [], {}, Response({"file": [f"At most {limit} files {what}."]}, 400)
            if any(upload.size > MAX_FILE_BYTES for upload in uploads):
                return [], {}, _too_large()
            files = [(upload.read(), upload.name) for upload in uploads]
            raw_options = {**request.query_params.dict(), **request.POST.dict()}
        else:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
            if length > MAX_FILE_BYTES:
                return [], {}, _too_large()
            files = [(request.body, None)]
            raw_options = request.query_params.dict()
        if not all(content for content, _ in files):
            return [], {}, Response({"detail": "The request carries no file."}, 400)
        options = OptionsSerializer(data=raw_options)
        options.is_valid(raise_exception=True)
        return files, options.validated_data, None


def _too_large() -> Response:
    return Response(
        {"detail": f"The file is larger than {MAX_FILE_BYTES:,} bytes."},
        status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    )


class LoadTestImportView(_FileEndpoint):
    action = CIToken.Action.IMPORT
    throttle_scope = "loadtests"

    @extend_schema(
        request=_FILE_BODY,
        parameters=_OPTIONS,
        responses={
            201: OpenApiResponse(OpenApiTypes.OBJECT, description="Runs stored."),
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="Already imported."),
            400: OpenApiResponse(description="The file is not a known load-test format."),
            403: OpenApiResponse(description="An agent token, or a CI token out of scope."),
            404: OpenApiResponse(description="No service with this slug."),
            413: OpenApiResponse(description="The file is too large."),
            429: OpenApiResponse(description="Over the token's rate; see Retry-After."),
        },
    )
    def post(self, request, slug: str) -> Response:
        service = self.service(request, slug)
        # Several `file` parts (a sweep's stage files) are one import: all stored or none.
        files, options, error = self.upload(request, MAX_UPLOAD_FILES, "per import")
        if error is not None:
            return error
        promoting = bool(options["baseline"] or options.get("run"))
        if promoting:
            authorize(request, service, CIToken.Action.PROMOTE)
        before = current_reference(service) if promoting else []
        try:
            runs = import_loadtest_files(
                service=service,
                files=files,
                format=options.get("format"),
                user=request.user,
                baseline=options["baseline"],
                baseline_run=options.get("run"),
                origin=LoadTest.Origin.API,
                measured_at=options.get("measured_at"),
                ci_token=self.ci_token(request),
                override_lint=options.get("override_lint", ""),
            )
        except LoadTestImportError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        created = sum(1 for r in runs if r.just_created)
        body = {
            "service": service.slug,
            "created": created,
            "runs": LoadTestSerializer(runs, many=True, context={"request": request}).data,
            # An archive's files that are not runs (logs, configs, a tool's copies of its runs).
            "skipped": runs.skipped,
            # Runs stored "date unknown" that a file of the same measurement dated.
            "filled_in": filled_in_notes(runs),
        }
        if promoting:
            body["reference_set"] = reference_leavers(service, before)
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def gate_run_body(gate_run: GateRun, request) -> dict:
    candidate = gate_run.candidate
    return {
        "id": gate_run.pk,
        "verdict": gate_run.verdict,
        "service": gate_run.service.slug,
        "baseline": None
        if gate_run.baseline is None
        else {"id": gate_run.baseline.pk, "label": gate_run.baseline.label},
        "candidate": {"id": candidate.pk, "label": candidate.label},
        "candidates": [{"id": r.pk, "label": r.label} for r in gate_run.candidates.all()],
        "baselines": [{"id": b.pk, "label": b.label} for b in gate_run.baseline_set.all()],
        "result": gate_run.result,
        "table": gate_run.table,
        "url": request.build_absolute_uri(gate_run.get_absolute_url()),
    }


_GATE_BODY = {
    "multipart/form-data": {
        "type": "object",
        "properties": {
            "file": {
                "type": "array",
                "items": {"type": "string", "format": "binary"},
                "description": "One or more result files: repeats of the same build.",
            }
        },
        "required": ["file"],
    },
    "application/json": OpenApiTypes.OBJECT,
}


class GateView(_FileEndpoint):
    action = CIToken.Action.GATE
    throttle_scope = "gate"

    @extend_schema(
        request=_GATE_BODY,
        parameters=_OPTIONS[:2],
        responses={
            200: OpenApiResponse(OpenApiTypes.OBJECT, description="Verdict: pass or regression."),
            400: OpenApiResponse(description="A file is not a known load-test format."),
            403: OpenApiResponse(description="An agent token, or a CI token out of scope."),
            404: OpenApiResponse(description="No service with this slug."),
            413: OpenApiResponse(description="The file is too large."),
            429: OpenApiResponse(description="Over the token's rate; see Retry-After."),
            422: OpenApiResponse(
                OpenApiTypes.OBJECT, description="Refused: no comparable baseline."
            ),
        },
    )
    def post(self, request, slug: str) -> Response:
        service = self.service(request, slug)
        # Several `file` parts are the repeats of one build, judged together.
        files, options, error = self.upload(request, MAX_GATE_FILES, "(repeats) per gate run")
        if error is not None:
            return error
        try:
            gate_run = run_gate(
                service=service,
                source=GateRun.Source.API,
                files=files,
                format=options.get("format"),
                user=request.user,
                measured_at=options.get("measured_at"),
                ci_token=self.ci_token(request),
            )
        except GateInputError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        except LoadTestImportError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        body = gate_run_body(gate_run, request)
        if gate_run.verdict == GateRun.Verdict.REFUSED:
            body["detail"] = "The gate refused to compare: " + "; ".join(gate_run.reasons)
            body["reasons"] = gate_run.reasons
            return Response(body, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        return Response(body, status=status.HTTP_200_OK)
