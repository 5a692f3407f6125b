"""/api/v1/services/<slug>/experiments/: record two stored runs as an experiment; list them.

The API twin of the comparison page's "Record as experiment" (`one_change.record_experiment`,
one implementation): `{"before": <run id>, "after": <run id>}`, two runs of the service at one
load, of two sweeps that differ in one serving parameter. A CI job that measured a change
(say `--max-num-seqs 512` against the default, each sweep imported through
`/loadtests/`) records it in the dossier's optimization history, pending until the team
judges it; the notes keep what the release gate said of the runs.

Authentication: a CI token in scope with the permission to promote (the two runs become
baselines of the dossier), or a session of a member of the service's team. Agent tokens: 403.

Answers: 201 with the experiment; 200 with the one already recorded for the same two runs
(a retry records nothing twice); 400 naming the field (not a run of this service, the same
run twice); 422 when the runs are not one change at one load, or cannot be baselines (a
failed run, refusing lint findings), with the reason; 403; 404 unknown service.

`target` (optional): the figure the experiment aims to move (`Experiment.target`'s choices:
a latency percentile field such as `ttft_p99_ms`, or `output_tps`, `qps`, `gpu_util`), which
the card's summary leads with; absent, null or "" when not stated. An unknown figure, or one the
two runs did not both measure, is a 400 naming `target`. A retry returns the experiment as first
recorded, its target unchanged.

GET lists the service's experiments, newest first (a page of `limit`, at most 500, from
`offset`), optionally only one `verdict`, only those a `run` is the before or after of, only
those recorded after `created_after`, or recorded or changed after `changed_after`: how a CI
job finds the team's verdict on what it recorded, or what is new since its last poll. Who
reads: any logged-in user (as the dossier page), a CI token in scope with any permission;
agent tokens 403.
"""

from __future__ import annotations

from django.core.exceptions import ValidationError as ModelValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response

from core.api import Rfc3339Field
from core.validators import MAX_ID
from dossiers.models import Experiment
from loadtests.api import CIEndpoint
from loadtests.importing import PromotionError
from loadtests.models import CIToken, LoadTest, source_run
from loadtests.one_change import ExperimentFromRunsError, experiments_of, record_experiment

TARGET_CHOICES = Experiment._meta.get_field("target").choices


class TargetField(serializers.ChoiceField):
    """An experiment's target figure: one of `TARGET_CHOICES`; null when not stated (the model
    stores blank)."""

    def __init__(self, **kwargs) -> None:
        codes = ", ".join(code for code, _ in TARGET_CHOICES)
        kwargs.setdefault(
            "error_messages",
            {"invalid_choice": f"“{{input}}” is not a figure an experiment can target: {codes}."},
        )
        # "" is taken as "not stated" but never answered: the answer says null.
        blank = not kwargs.get("read_only", False)
        super().__init__(choices=TARGET_CHOICES, allow_null=True, allow_blank=blank, **kwargs)

    def to_internal_value(self, data) -> str:
        return super().to_internal_value(data) if data not in (None, "") else ""

    def to_representation(self, value: str) -> str | None:
        return value or None


class ExperimentFromRunsSerializer(serializers.Serializer):
    before = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="The run (load test id) measured before it."
    )
    after = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, help_text="The run measured after it, at the same load."
    )
    target = TargetField(
        required=False,
        help_text="The figure the change aims to move (the card's summary leads with it); "
        "both runs must have measured it. Absent or null: not stated.",
    )

    def validate(self, data: dict) -> dict:
        """Adds `runs`: the two runs by id, both of the service in the context."""
        if data["before"] == data["after"]:
            raise serializers.ValidationError({"after": "the same run as before: name two runs"})
        service = self.context["service"]
        runs = LoadTest.objects.filter(service=service).in_bulk([data["before"], data["after"]])
        missing = {
            side: f"no run {data[side]} of service {service.slug}"
            for side in ("before", "after")
            if data[side] not in runs
        }
        if missing:
            raise serializers.ValidationError(missing)
        return {**data, "runs": runs}


class ExperimentSerializer(serializers.ModelSerializer):
    """The experiment as recorded: what changed, its baselines (`before`, `after`) and the runs
    they were promoted from (`before_run`, `after_run`: null for a baseline entered by hand),
    the verdict (pending until the team judges it) and the notes (with the gate's reading)."""

    before_run = serializers.SerializerMethodField()
    after_run = serializers.SerializerMethodField()
    url = serializers.SerializerMethodField()
    target = TargetField(read_only=True, help_text="The figure it aims to move; null: not stated.")

    class Meta:
        model = Experiment
        fields = [
            "id", "title", "hypothesis", "target", "variable_key", "value_from", "value_to",
            "before", "after", "before_run", "after_run", "verdict", "notes", "run_on",
            "created_at", "updated_at", "url",
        ]  # fmt: skip

    def get_before_run(self, experiment: Experiment) -> int | None:
        run = source_run(experiment.before)
        return run.pk if run else None

    def get_after_run(self, experiment: Experiment) -> int | None:
        run = source_run(experiment.after)
        return run.pk if run else None

    def get_url(self, experiment: Experiment) -> str:
        return self.context["request"].build_absolute_uri(experiment.get_absolute_url())


class ExperimentFilterSerializer(serializers.Serializer):
    """The list's query: each given filter narrows it."""

    verdict = serializers.ChoiceField(choices=Experiment.Verdict.choices, required=False)
    run = serializers.IntegerField(
        min_value=1, max_value=MAX_ID, required=False, help_text="Its before or after run."
    )
    created_after = Rfc3339Field(
        required=False, help_text="Recorded after this time (with its zone offset)."
    )
    changed_after = Rfc3339Field(
        required=False,
        help_text="Recorded or changed (a verdict given, notes edited) after this time: "
        "what a poll has not seen.",
    )


class ExperimentPages(LimitOffsetPagination):
    default_limit = 100
    max_limit = 500


class ExperimentPageSerializer(serializers.Serializer):
    """One page of the list (the schema of `ExperimentPages`' answer)."""

    count = serializers.IntegerField(help_text="Experiments matching, on every page.")
    next = serializers.URLField(allow_null=True)
    previous = serializers.URLField(allow_null=True)
    results = ExperimentSerializer(many=True)


class ExperimentFromRunsView(CIEndpoint):
    """A service's experiments: record two stored runs as one (POST), list them (GET)."""

    action = CIToken.Action.PROMOTE
    throttle_scope = "loadtests"

    def get_throttles(self) -> list:
        # Reads are not counted, as the plan and metrics reads are not: a CI job polling for
        # the team's verdict must not spend the budget its imports and recordings share.
        return [] if self.request.method == "GET" else super().get_throttles()

    @extend_schema(
        operation_id="v1_services_experiments_list",
        summary="List the service's experiments, newest first",
        parameters=[
            ExperimentFilterSerializer,
            OpenApiParameter("limit", int, description="At most this many (100; up to 500)."),
            OpenApiParameter("offset", int, description="Skip this many of the newest."),
        ],
        responses={
            200: ExperimentPageSerializer,
            400: OpenApiResponse(description="A filter that is not valid, named."),
            403: OpenApiResponse(description="An agent token, or a CI token out of scope."),
            404: OpenApiResponse(description="No service with this slug."),
        },
    )
    def get(self, request, slug: str) -> Response:
        service = self.service(request, slug, reading=True)
        given = ExperimentFilterSerializer(data=request.query_params)
        given.is_valid(raise_exception=True)
        experiments = experiments_of(service, **given.validated_data)
        pages = ExperimentPages()
        page = pages.paginate_queryset(experiments, request, view=self)
        context = {"request": request}
        return pages.get_paginated_response(
            ExperimentSerializer(page, many=True, context=context).data
        )

    @extend_schema(
        summary="Record two stored runs as an experiment (pending)",
        request=ExperimentFromRunsSerializer,
        responses={
            201: ExperimentSerializer,
            200: OpenApiResponse(
                ExperimentSerializer, description="These two runs were already recorded."
            ),
            400: OpenApiResponse(
                description="A field is missing or names no run of it, or a target that is "
                "unknown or not measured by both runs."
            ),
            403: OpenApiResponse(
                description="An agent token, or a CI token out of scope or without the "
                "permission to promote."
            ),
            404: OpenApiResponse(description="No service with this slug."),
            422: OpenApiResponse(
                OpenApiTypes.OBJECT,
                description="Not one change at one load, or a run that cannot be a baseline.",
            ),
            429: OpenApiResponse(description="Over the token's rate; see Retry-After."),
        },
    )
    def post(self, request, slug: str) -> Response:
        try:
            service = self.service(request, slug)
        except PermissionDenied as exc:
            if isinstance(request.auth, CIToken):  # say why promoting is what it needs
                raise PermissionDenied(
                    f"{exc.detail} Recording an experiment makes its two runs baselines."
                ) from exc
            raise
        given = ExperimentFromRunsSerializer(data=request.data, context={"service": service})
        given.is_valid(raise_exception=True)
        data = given.validated_data
        token = self.ci_token(request)
        try:
            experiment, created = record_experiment(
                before=data["runs"][data["before"]],
                after=data["runs"][data["after"]],
                user=request.user,
                recorded_by=str(token) if token else "",
                target=data.get("target", ""),
            )
        except (ExperimentFromRunsError, PromotionError) as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_422_UNPROCESSABLE_ENTITY)
        except ModelValidationError as exc:
            # The model's rules on what was asked (a target the runs did not both measure):
            # named by field, as the serializer's own errors are.
            raise serializers.ValidationError(exc.message_dict) from exc
        body = ExperimentSerializer(experiment, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)
