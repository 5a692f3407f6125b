"""Alert pages: parse the request, call a selector or service, render."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST

from alerts import charts, selectors, services
from alerts.forms import ReceiverForm, RuleForm, SilenceForm, teams_of
from alerts.models import AlertInstance, Receiver, Rule, Silence
from alerts.prometheus_rules import rules_yaml
from dossiers.models import Service


@login_required
def alert_list(request: HttpRequest) -> HttpResponse:
    """Alerts, firing first; `?service=SLUG` keeps one service's, `?state=` one state's
    (firing, pending, live = both, resolved, inactive), as the fleet's links ask."""
    service = None
    if slug := request.GET.get("service", "").strip():
        service = Service.objects.filter(slug=slug).first()
        if service is None:
            return render(
                request,
                "alerts/alert_list.html",
                {"error": f"service: no service {slug!r}.", "alerts": []},
                status=404,
            )
    state = request.GET.get("state", "").strip()
    if state and state not in selectors.STATE_FILTERS:
        choices = ", ".join(selectors.STATE_FILTERS)
        return render(
            request,
            "alerts/alert_list.html",
            {"error": f"state: {state!r} is not one of {choices}.", "alerts": []},
            status=400,
        )
    alerts = selectors.alert_list(service=service, states=selectors.STATE_FILTERS.get(state))
    return render(
        request,
        "alerts/alert_list.html",
        {"alerts": alerts, "service": service, "state": state, "filtered": bool(service or state)},
    )


@login_required
def alert_detail(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        instance = selectors.alert_detail(pk)
    except AlertInstance.DoesNotExist:
        return render(request, "404.html", status=404)
    return render(
        request,
        "alerts/alert_detail.html",
        {
            "alert": instance,
            "rule": instance.rule,
            "service": instance.service,
            "events": selectors.alert_events(instance),
            "notifications": selectors.mark_secrets(
                selectors.instance_notifications(instance), request.user
            ),
            "chart_json": charts.value_chart_json(instance),
            "can_edit": instance.service.can_edit(request.user),
        },
    )


@login_required
def rule_list(request: HttpRequest) -> HttpResponse:
    service = None
    if slug := request.GET.get("service"):
        service = get_object_or_404(Service.objects.select_related("team"), slug=slug)
    rules = selectors.rules_for_list(service)
    editable = set(Service.objects.editable_by(request.user).values_list("pk", flat=True))
    return render(
        request,
        "alerts/rule_list.html",
        {"rules": rules, "service": service, "editable": editable},
    )


def _editable_service(user, slug: str) -> Service:
    service = get_object_or_404(Service.objects.select_related("team"), slug=slug)
    if not service.can_edit(user):
        raise PermissionDenied("Only members of the service's team edit its alert rules.")
    return service


@login_required
def rule_edit(request: HttpRequest, pk: int | None = None, slug: str | None = None):
    if pk is not None:
        rule = get_object_or_404(Rule.objects.select_related("service__team"), pk=pk)
        service = _editable_service(request.user, rule.service.slug)
    else:
        rule = None
        service = _editable_service(request.user, slug)
    form = RuleForm(request.POST or None, instance=rule, service=service)
    if request.method == "POST" and form.is_valid():
        saved = form.save()
        messages.success(request, f"Rule “{saved.name}” saved.")
        return redirect(f"{reverse('alerts:rule_list')}?service={service.slug}")
    title = f"Edit rule: {rule.name}" if rule else f"New alert rule for {service.name}"
    return render(request, "alerts/form.html", {"form": form, "title": title, "service": service})


@login_required
@require_POST
def rule_defaults(request: HttpRequest, slug: str) -> HttpResponse:
    service = _editable_service(request.user, slug)
    created = services.ensure_default_rules(service)
    messages.success(request, f"{len(created)} default rule(s) added.")
    return redirect(f"{reverse('alerts:rule_list')}?service={service.slug}")


@login_required
def silence_list(request: HttpRequest) -> HttpResponse:
    form = SilenceForm(request.POST or None, user=request.user)
    if request.method == "POST":
        if not teams_of(request.user).exists():
            raise PermissionDenied("You need to be in a team to silence its alerts.")
        if form.is_valid():
            data = form.cleaned_data
            services.silence_create(
                team=data["team"],
                matchers=data["matchers"],
                starts_at=data["starts_at"],
                ends_at=data["ends_at"],
                comment=data["comment"],
                user=request.user,
            )
            messages.success(request, "Silence created.")
            return redirect("alerts:silence_list")
    return render(
        request,
        "alerts/silence_list.html",
        {"form": form, "silences": selectors.silences(timezone.now()), "now": timezone.now()},
    )


@login_required
@require_POST
def silence_expire(request: HttpRequest, pk: int) -> HttpResponse:
    silence = get_object_or_404(Silence, pk=pk)
    if not teams_of(request.user).filter(pk=silence.team_id).exists():
        raise PermissionDenied("Only the team's members expire its silences.")
    services.silence_expire(silence=silence)
    messages.success(request, "Silence expired.")
    return redirect("alerts:silence_list")


@login_required
def receiver_list(request: HttpRequest) -> HttpResponse:
    editable = set(teams_of(request.user).values_list("pk", flat=True))
    return render(
        request,
        "alerts/receiver_list.html",
        {
            "receivers": selectors.receivers_for(request.user),
            "notifications": selectors.recent_notifications_for(request.user),
            "editable_teams": editable,
        },
    )


@login_required
def receiver_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    receiver = None
    if pk is not None:
        receiver = get_object_or_404(Receiver, pk=pk)
        if not teams_of(request.user).filter(pk=receiver.team_id).exists():
            raise PermissionDenied("Only the team's members edit its receivers.")
    elif not teams_of(request.user).exists():
        raise PermissionDenied("You need to be in a team to add a receiver.")
    form = ReceiverForm(request.POST or None, instance=receiver, user=request.user)
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, "Receiver saved.")
        return redirect("alerts:receiver_list")
    title = f"Edit receiver: {receiver.name}" if receiver else "New receiver"
    return render(request, "alerts/form.html", {"form": form, "title": title})


@login_required
def service_fragment(request: HttpRequest, slug: str) -> HttpResponse:
    """Open alerts and recent history of one service, as an HTML fragment for the dossier."""
    service = get_object_or_404(Service, slug=slug)
    now = timezone.now()
    return render(
        request,
        "alerts/service_fragment.html",
        {
            "service": service,
            "alerts": selectors.alert_list(service=service, include_ended=False),
            "events": selectors.recent_history_for_service(service, now, limit=20),
        },
    )


@login_required
def prometheus_rules(request: HttpRequest, slug: str) -> HttpResponse:
    """The service's rules as a Prometheus rules file, downloaded (or shown with ?view=1)."""
    service = get_object_or_404(Service, slug=slug)
    try:
        text = rules_yaml(service)
    except ValueError as exc:  # the source's selectors no longer parse
        return HttpResponse(f"{exc}\n", status=400, content_type="text/plain")
    response = HttpResponse(text, content_type="text/plain; charset=utf-8")
    if not request.GET.get("view"):
        response["Content-Disposition"] = f'attachment; filename="perfhub-{slug}.rules.yml"'
    return response
