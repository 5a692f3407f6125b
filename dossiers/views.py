"""Dossier pages: thin views that read through `selectors` and write through `services`.

Every page needs a login; every edit URL answers 403 (GET and POST) to anyone outside the
service's team (`permissions.service_for_editing`).
"""

from __future__ import annotations

import json

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.text import capfirst

from dossiers import forms, markdown, provenance, rendering, sections, selectors, services
from dossiers.models import Service
from dossiers.permissions import service_for_editing, service_for_reading

# ---------------------------------------------------------------------------------------------
# Reading


def _dossier_context(request: HttpRequest, slug: str) -> dict:
    service = service_for_reading(slug)
    dossier = selectors.dossier(service, user=request.user)
    return {
        "service": service,
        "d": dossier,
        "narrative_html": rendering.render_markdown(dossier.narrative.body)
        if dossier.narrative
        else "",
        "config_diff": rendering.classify_unified(dossier.config_diff),
        "import_form": forms.MarkdownImportForm() if dossier.can_edit else None,
        "fragments": dossier_fragments(service),
    }


def dossier_fragments(service: Service) -> dict[str, str]:
    """URLs of fragments other apps serve for this dossier (live panels, alert timeline).

    dossiers imports neither dashboards nor alerts (docs/architecture.md): the wiring lives in
    settings.PERFHUB_DOSSIER_FRAGMENTS, e.g. {"live_panels": "/dashboards/services/{slug}/live/"},
    and the page's script fetches each URL into its placeholder.
    """
    templates = getattr(settings, "PERFHUB_DOSSIER_FRAGMENTS", {}) or {}
    return {name: url.format(slug=service.slug) for name, url in templates.items()}


@login_required
def dossier(request: HttpRequest, slug: str) -> HttpResponse:
    context = _dossier_context(request, slug)
    context["sections"] = sections.shown(request, context)  # one module each: dossiers/sections/
    return render(request, "dossiers/dossier.html", context)


@login_required
def onboarding(request: HttpRequest, slug: str) -> HttpResponse:
    context = _dossier_context(request, slug)
    context["fresh"] = selectors.freshness(context["d"], now=timezone.now())
    return render(request, "dossiers/onboarding.html", context)


@login_required
def baseline(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_reading(slug)
    run = get_object_or_404(service.baselines.select_related("config_version", "created_by"), pk=pk)
    return render(
        request,
        "dossiers/baseline.html",
        {
            "service": service,
            "baseline": run,
            "can_edit": service.can_edit(request.user),
            "latency": selectors.latency_table(run),
            "slo": selectors.slo_checks(service, run),
            "economics": selectors.economics_view(service, run),
            "bottlenecks": [
                b
                for _, items in selectors.bottleneck_groups(list(run.bottlenecks.all()))
                for b in items
            ],
            "measured_by": provenance.baseline_links([run]).get(run.pk, []),
            "experiments_before": run.experiments_before.all(),
            "experiments_after": run.experiments_after.all(),
        },
    )


@login_required
def revisions(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_reading(slug)
    a, b = selectors.revision_pair(service, request.GET.get("a"), request.GET.get("b"))
    rows = rendering.side_by_side(a.body, b.body) if a and b else []
    return render(
        request,
        "dossiers/revisions.html",
        {
            "service": service,
            "revisions": service.revisions.select_related("author").defer("body"),
            "a": a,
            "b": b,
            "rows": rows,
            "changed": any(row.kind != "equal" for row in rows),
        },
    )


@login_required
def config_versions(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_reading(slug)
    a, b = selectors.config_pair(service, request.GET.get("a"), request.GET.get("b"))
    diff = b.diff_from(a) if a and b else []
    return render(
        request,
        "dossiers/configs.html",
        {
            "service": service,
            "versions": service.config_versions.select_related("author"),
            "a": a,
            "b": b,
            "diff": rendering.classify_unified(diff),
            "can_edit": service.can_edit(request.user),
        },
    )


@login_required
def export_markdown(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_reading(slug)
    response = HttpResponse(
        markdown.export_dossier(service), content_type="text/markdown; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{service.slug}-dossier.md"'
    return response


# ---------------------------------------------------------------------------------------------
# Editing (owners only)


def _form_page(request, template: str, service: Service | None, form, **extra) -> HttpResponse:
    # A rejected form answers 200 with its messages, as Django does: a 4xx would make browsers
    # log a console error for what is an ordinary validation message.
    return render(request, template, {"service": service, "form": form, **extra})


def _apply_errors(form, exc: ValidationError) -> None:
    """Show a service-level ValidationError next to the fields it names."""
    if hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        form.add_error(None, exc.messages)


@login_required
def service_create(request: HttpRequest) -> HttpResponse:
    if not forms.editable_teams(request.user).exists():
        raise PermissionDenied("You need to be in a team to create a service.")
    form = forms.ServiceCreateForm(request.POST or None, user=request.user)
    if request.method == "POST" and form.is_valid():
        fields = dict(form.cleaned_data)
        team = fields.pop("team")
        try:
            created = services.service_create(team=team, **fields)
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, f"Created {created.name}.")
            return redirect(created)
    return _form_page(request, "dossiers/form.html", None, form, title="New service")


@login_required
def service_edit(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    form = forms.ServiceSettingsForm(request.POST or None, instance=service, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            services.service_update(service=service, **form.cleaned_data)
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, "Service settings saved.")
            return redirect(service)
    # ModelForm validation writes into the instance in memory; show the stored name.
    service.refresh_from_db(fields=["name"])
    return _form_page(request, "dossiers/form.html", service, form, title="Service settings")


@login_required
def narrative_edit(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    current = selectors.current_narrative(service)
    form = forms.NarrativeForm(
        request.POST or None, initial={"body": current.body if current else ""}
    )
    if request.method == "POST" and form.is_valid():
        services.narrative_revise(
            service=service,
            body=form.cleaned_data["body"],
            summary=form.cleaned_data["summary"],
            author=request.user,
        )
        messages.success(request, "Narrative saved as a new revision.")
        return redirect(reverse("dossiers:dossier", args=[service.slug]) + "#narrative")
    return _form_page(
        request, "dossiers/narrative_form.html", service, form, title="Edit narrative"
    )


@login_required
def baseline_edit(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    instance = get_object_or_404(service.baselines, pk=pk) if pk else None
    kwargs = {"instance": instance} if instance else {}
    form = forms.BaselineForm(request.POST or None, service=service, **kwargs)
    if request.method == "POST" and form.is_valid():
        fields = dict(form.cleaned_data)
        make_current = fields.pop("make_current", False)
        try:
            if instance:
                saved = services.baseline_update(baseline=instance, **fields)
            else:
                saved = services.baseline_record(
                    service=service, make_current=make_current, created_by=request.user, **fields
                )
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, f"Baseline “{saved.label}” saved.")
            return redirect(saved)
    title = f"Edit baseline “{instance.label}”" if instance else "New baseline"
    return _form_page(request, "dossiers/baseline_form.html", service, form, title=title)


@login_required
def baseline_promote(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    run = get_object_or_404(service.baselines, pk=pk)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    services.baseline_promote(baseline=run, user=request.user)
    messages.success(request, f"“{run.label}” is now the current baseline.")
    return redirect(service)


def _record_view(records: str, form_class, noun: str, record, update, *, by_user: bool = False):
    """The add (no `pk`) and edit view of one of a service's `records` (its related manager,
    and the dossier section's anchor), writing through `services`: `record(service=...)`, with
    `created_by` the user when `by_user`, or `update(<model name>=instance)`, as services name
    it (`slo_update(slo=...)`). A ValidationError shows next to the fields it names."""

    @login_required
    def edit(request: HttpRequest, slug: str, pk: int | None = None) -> HttpResponse:
        service = service_for_editing(request.user, slug)
        instance = get_object_or_404(getattr(service, records), pk=pk) if pk else None
        kwargs = {"instance": instance} if instance else {}
        form = form_class(request.POST or None, service=service, **kwargs)
        if request.method == "POST" and form.is_valid():
            fields = dict(form.cleaned_data)
            try:
                if instance:
                    update(**{instance._meta.model_name: instance}, **fields)
                elif by_user:
                    record(service=service, created_by=request.user, **fields)
                else:
                    record(service=service, **fields)
            except ValidationError as exc:
                _apply_errors(form, exc)
            else:
                messages.success(request, f"{capfirst(noun)} saved.")
                return redirect(reverse("dossiers:dossier", args=[service.slug]) + f"#{records}")
        title = f"Edit {noun}" if instance else f"New {noun}"
        return _form_page(request, "dossiers/form.html", service, form, title=title)

    return edit


bottleneck_edit = _record_view(
    "bottlenecks", forms.BottleneckForm, "bottleneck", services.bottleneck_record,
    services.bottleneck_update,
)  # fmt: skip
experiment_edit = _record_view(
    "experiments", forms.ExperimentForm, "experiment", services.experiment_record,
    services.experiment_update, by_user=True,
)  # fmt: skip
slo_edit = _record_view("slos", forms.SloForm, "SLO", services.slo_record, services.slo_update)


@login_required
def slo_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    slo = get_object_or_404(service.slos, pk=pk)
    if request.method != "POST":
        return HttpResponseNotAllowed(["POST"])
    services.slo_delete(slo=slo)
    messages.success(request, f"SLO “{slo.name}” deleted.")
    return redirect(reverse("dossiers:dossier", args=[service.slug]) + "#slos")


@login_required
def config_create(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_editing(request.user, slug)
    current = selectors.current_config(service)
    initial = {"config": json.dumps(current.config, indent=2, sort_keys=True) if current else "{}"}
    form = forms.ConfigVersionForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            version = services.config_version_create(
                service=service,
                config=form.cleaned_data["config"],
                note=form.cleaned_data["note"],
                author=request.user,
            )
        except ValidationError as exc:
            _apply_errors(form, exc)
        else:
            messages.success(request, f"Config v{version.version} is now current.")
            return redirect(reverse("dossiers:configs", args=[service.slug]))
    return _form_page(
        request, "dossiers/config_form.html", service, form, title="New config version"
    )


@login_required
def import_markdown(request: HttpRequest, slug: str) -> HttpResponse:
    """Upload a file -> a preview of what it changes -> apply (one transaction).

    The preview page carries the file's text in a hidden field, so applying imports exactly
    what was previewed; a file of another service needs the rename box ticked.
    """
    service = service_for_editing(request.user, slug)
    title = "Import dossier from Markdown"
    if request.method == "POST" and "text" in request.POST:
        confirm = forms.MarkdownApplyForm(request.POST)
        if confirm.is_valid():
            try:
                plan = markdown.import_dossier(
                    service=service,
                    text=confirm.cleaned_data["text"],
                    author=request.user,
                    rename=confirm.cleaned_data["rename"],
                )
            except markdown.OtherServiceError as exc:
                confirm.add_error("rename", str(exc))
            except markdown.DossierFormatError as exc:
                confirm.add_error(None, str(exc))
            else:
                messages.success(request, f"Imported from Markdown: {plan.summary()}.")
                return redirect(service)
        return _preview_page(request, service, confirm, title)
    form = forms.MarkdownImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        text = form.cleaned_data["file"]
        try:
            markdown.plan_import(service=service, text=text)
        except markdown.DossierFormatError as exc:
            form.add_error("file", str(exc))
        else:
            confirm = forms.MarkdownApplyForm(initial={"text": text})
            return _preview_page(request, service, confirm, title)
    return _form_page(request, "dossiers/import.html", service, form, title=title)


def _preview_page(request: HttpRequest, service: Service, confirm, title: str) -> HttpResponse:
    text = confirm["text"].value() or ""
    try:
        plan = markdown.plan_import(service=service, text=text)
    except markdown.DossierFormatError as exc:
        form = forms.MarkdownImportForm()
        form.add_error(None, str(exc))
        return _form_page(request, "dossiers/import.html", service, form, title=title)
    return render(
        request,
        "dossiers/import_preview.html",
        {"service": service, "form": confirm, "plan": plan, "title": title},
    )
