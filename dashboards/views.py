"""Dashboard pages and the fragments the dossier embeds. Thin: parse the request, call a
selector, build figures, render.

- `service` is the page; its charts come from `service_panels` (JSON), the same endpoint the
  dossier's live panels fetch. `service_timeline` is an HTML fragment for the dossier.
- `fleet` and `loadtest_compare` embed their figures in the page as JSON (`json_script`),
  drawn by static/js/panels.js: no inline script anywhere.
"""

from __future__ import annotations

from datetime import timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import json_script
from django.views.decorators.http import require_GET, require_POST
from plotly.utils import PlotlyJSONEncoder

from dashboards import claims, diagnosis, right_now, selectors, timeline, workload_claims
from dashboards.figures.common import panels_json, panels_payload
from dashboards.figures.fleet import fleet_panels
from dashboards.figures.loadtests import comparison_panels
from dashboards.figures.service import PANELS
from dashboards.figures.service import service_panels as build_service_panels
from dashboards.ranges import PRESETS, RangeError, TimeRange, parse_range
from dossiers import selectors as dossier_selectors
from dossiers.forms import editable_teams
from dossiers.permissions import service_for_editing, service_for_reading

RESOLUTION_LABELS = {60: "1 min", 300: "5 min", 3600: "1 h"}


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    """The fleet: each service's baseline beside its live figures, the drift, and its alerts."""
    q = request.GET.get("q", "")
    sort = request.GET.get("sort", "name")
    if sort.lstrip("-") not in dossier_selectors.FLEET_SORTS:
        sort = "name"
    rows = selectors.fleet_home(q=q, sort=sort)
    return render(
        request,
        "dashboards/home.html",
        {
            "rows": rows,
            "q": q,
            "sort": sort,
            "can_create": editable_teams(request.user).exists(),
            "window_minutes": claims.window_minutes(),
        },
    )


def _hosts(request: HttpRequest) -> list[str] | None:
    hosts = [h.strip() for h in request.GET.getlist("host") if h.strip()]
    return hosts or None


def _range_or_default(request: HttpRequest) -> tuple[TimeRange, str]:
    """The requested range, or the default with the error to show (pages never 400)."""
    try:
        return parse_range(request.GET), ""
    except RangeError as exc:
        return parse_range({}), f"{exc.field}: {exc.message} Showing the last 24 h instead."


@login_required
@require_GET
def service(request: HttpRequest, slug: str) -> HttpResponse:
    svc = service_for_reading(slug)
    time_range, error = _range_or_default(request)
    hosts = _hosts(request)
    query = [*time_range.query().items(), *[("host", h) for h in hosts or []]]
    return render(
        request,
        "dashboards/service.html",
        {
            "service": svc,
            "range": time_range,
            "range_error": error,
            "presets": [(key, label) for key, (label, _) in PRESETS.items()],
            "hosts": hosts or [],
            "available_hosts": selectors.service_hosts(service=svc, now=timezone.now()),
            "resolution": RESOLUTION_LABELS[time_range.resolution_s],
            "panels_url": reverse("dashboards:service_panels", args=[slug])
            + "?"
            + urlencode(query),
            "timeline_url": reverse("dashboards:service_timeline", args=[slug]),
            "diagnosis_url": reverse("dashboards:service_diagnosis", args=[slug])
            + "?"
            + urlencode(query),
        },
    )


@login_required
@require_GET
def service_panels(request: HttpRequest, slug: str) -> HttpResponse:
    """The service's charts as JSON: {"panels": [{id, wide, empty, figure}], ...}.

    `?range=` as the page; `?host=` (repeatable); `?only=latency-e2e,gpu-busy` for a subset.
    """
    svc = service_for_reading(slug)
    try:
        time_range = parse_range(request.GET)
    except RangeError as exc:
        return JsonResponse({exc.field: [exc.message]}, status=400)
    only = [p for p in request.GET.get("only", "").split(",") if p] or None
    if only is not None and (unknown := [p for p in only if p not in PANELS]):
        return JsonResponse(
            {"only": [f"Unknown panel {unknown[0]!r}; one of {', '.join(PANELS)}."]}, status=400
        )
    d = selectors.service_dashboard(
        service=svc, start=time_range.start, end=time_range.end, hosts=_hosts(request)
    )
    body = panels_json(
        build_service_panels(d, only),
        service=svc.slug,
        heading=f"Live: {time_range.label}",
        range=time_range.query(),
        resolution_s=d.metrics.resolution_s,
        dashboard_url=reverse("dashboards:service", args=[slug])
        + "?"
        + urlencode(time_range.query()),
    )
    return HttpResponse(body, content_type="application/json")


@login_required
@require_GET
def service_live_fragment(request: HttpRequest, slug: str) -> HttpResponse:
    """HTML fragment for the dossier page: the key live charts, drawn by panels.js."""
    return render(request, "dashboards/live_fragment.html", {"service": service_for_reading(slug)})


@login_required
@require_GET
def service_claims_fragment(request: HttpRequest, slug: str) -> HttpResponse:
    """HTML fragment for the dossier: each claimed figure against live data, and its verdict."""
    svc = service_for_reading(slug)
    baseline = dossier_selectors.current_baseline(svc)
    window: dict = {}
    if any(key in request.GET for key in ("start", "end", "range")):
        # The range the user picked: every figure of the check is read over it.
        params = request.GET.copy()
        if "start" in params and "range" not in params:
            params["range"] = "custom"
        try:
            picked = parse_range(params)
        except RangeError as exc:
            return JsonResponse({exc.field: [exc.message]}, status=400)
        window = {"start": picked.start, "end": picked.end}
    check = claims.check_claims([svc], {svc.pk: baseline}, **window)[svc.pk]
    claims.drift_since(check)
    workload_claims.workload_claims(check)
    return render(
        request,
        "dashboards/claims_fragment.html",
        {"service": svc, "check": check, "can_edit": svc.can_edit(request.user)},
    )


@login_required
@require_GET
def service_right_now_fragment(request: HttpRequest, slug: str) -> HttpResponse:
    """HTML fragment for the top of the dossier and onboarding pages: the one verdict right
    now (SLOs and live alerts), then the baseline's claims as a separate, labelled line."""
    svc = service_for_reading(slug)
    rn = right_now.right_now([svc], now=timezone.now())[svc.pk]
    baseline = dossier_selectors.current_baseline(svc)
    check = claims.check_claims([svc], {svc.pk: baseline})[svc.pk]
    return render(
        request, "dashboards/right_now_fragment.html", {"service": svc, "rn": rn, "check": check}
    )


@login_required
@require_POST
def live_baseline_candidate(request: HttpRequest, slug: str) -> HttpResponse:
    """Record the last live window as a baseline candidate (not current): the owner reviews it
    on its page, then promotes it."""
    svc = service_for_editing(request.user, slug)
    baseline = claims.record_live_baseline(service=svc, user=request.user)
    if baseline is None:
        messages.error(request, "No live traffic in the window: nothing to record.")
        return redirect(svc.get_absolute_url())
    messages.success(request, "Live window recorded as a baseline candidate: review, then promote.")
    return redirect(baseline.get_absolute_url())


@login_required
@require_GET
def service_timeline(request: HttpRequest, slug: str) -> HttpResponse:
    """HTML fragment: alerts, deploys, experiments, gate runs and steps, newest first;
    `?days=N` (1-90) keeps the last N days (onboarding's "this week")."""
    svc = service_for_reading(slug)
    days = request.GET.get("days", "")
    days = int(days) if days.isdigit() and 1 <= int(days) <= 90 else None
    since = None if days is None else timezone.now() - timedelta(days=days)
    entries = timeline.timeline(service=svc, since=since)
    counts = {group: 0 for group, _ in timeline.TIMELINE_FILTERS}
    for entry in entries:
        counts[entry.group] = counts.get(entry.group, 0) + entry.count
    filters = [(group, label, counts[group]) for group, label in timeline.TIMELINE_FILTERS]
    return render(
        request,
        "dashboards/timeline.html",
        {"service": svc, "entries": entries, "days": days, "filters": filters},
    )


FLEET_PRESETS = ("1h", "24h", "7d")


@login_required
@require_GET
def fleet(request: HttpRequest) -> HttpResponse:
    time_range, error = _range_or_default(request)
    data = selectors.fleet_dashboard(
        start=time_range.start, end=time_range.end, span=time_range.label
    )
    panels = panels_payload(fleet_panels(data, span=time_range.label))
    return render(
        request,
        "dashboards/fleet.html",
        {
            "fleet": data,
            "range": time_range,
            "range_error": error,
            "presets": [(key, PRESETS[key][0]) for key in FLEET_PRESETS],
            "panels_json": json_script(panels, "fleet-panels", encoder=PlotlyJSONEncoder),
        },
    )


@login_required
@require_GET
def loadtest_compare(request: HttpRequest, slug: str) -> HttpResponse:
    """Baseline vs candidate: `?candidate=<load test id>&baseline=<baseline id>` (default:
    the current baseline)."""
    svc = service_for_reading(slug)
    baselines, tests = selectors.loadtest_choices(service=svc)

    def _id(name: str) -> int | None:
        raw = request.GET.get(name, "")
        return int(raw) if raw.isdigit() else None

    candidate_id, baseline_id = _id("candidate"), _id("baseline")
    comparison = None
    if candidate_id is not None:
        comparison = selectors.loadtest_comparison(
            service=svc, candidate_id=candidate_id, baseline_id=baseline_id
        )
    panels = ""
    if comparison is not None:
        panels = json_script(
            panels_payload(comparison_panels(comparison)),
            "compare-panels",
            encoder=PlotlyJSONEncoder,
        )
    return render(
        request,
        "dashboards/loadtest_compare.html",
        {
            "service": svc,
            "baselines": baselines,
            "tests": tests,
            "candidate_id": candidate_id,
            "baseline_id": baseline_id,
            "comparison": comparison,
            "panels_json": panels,
        },
    )


@login_required
@require_GET
def service_diagnosis(request: HttpRequest, slug: str) -> HttpResponse:
    """The symptom-table rules over the range (`?range=` as the dashboard; `?host=`)."""
    svc = service_for_reading(slug)
    hosts = _hosts(request)
    context = {
        "service": svc,
        "presets": [(key, label) for key, (label, _) in PRESETS.items()],
        "hosts": hosts or [],
        "available_hosts": selectors.service_hosts(service=svc, now=timezone.now()),
    }
    try:
        time_range = parse_range(request.GET)
    except RangeError as exc:
        context.update(range=parse_range({}), range_error=f"{exc.field}: {exc.message}")
        return render(request, "dashboards/diagnosis.html", context, status=400)
    found = diagnosis.window_diagnosis(
        service=svc, start=time_range.start, end=time_range.end, hosts=hosts
    )
    query = [*time_range.query().items(), *[("host", h) for h in hosts or []]]
    context.update(
        range=time_range,
        diagnosis=found,
        resolution=RESOLUTION_LABELS[found.resolution_s],
        can_edit=svc.can_edit(request.user),
        dashboard_url=reverse("dashboards:service", args=[slug]) + "?" + urlencode(query),
    )
    return render(request, "dashboards/diagnosis.html", context)


@login_required
@require_POST
def service_diagnosis_confirm(request: HttpRequest, slug: str) -> HttpResponse:
    """Confirm one proposal: the form names the rule and the exact window it was shown for."""
    svc = service_for_editing(request.user, slug)
    rule = request.POST.get("rule", "")
    if rule not in diagnosis.RULE_NAMES:
        return HttpResponseBadRequest(
            f"rule: {rule!r} is not one of {', '.join(diagnosis.RULE_NAMES)}.",
            content_type="text/plain",
        )
    try:
        start, end = diagnosis.window_from_form(request.POST)
    except RangeError as exc:
        return HttpResponseBadRequest(f"{exc.field}: {exc.message}", content_type="text/plain")
    hosts = [h.strip() for h in request.POST.getlist("host") if h.strip()] or None
    try:
        bottleneck = diagnosis.confirm_window_proposal(
            service=svc, start=start, end=end, rule=rule, hosts=hosts, user=request.user
        )
    except diagnosis.UnknownProposal as exc:
        messages.error(request, f"Nothing confirmed: {exc}.")
        window = TimeRange("custom", start, end)
        back = [*window.query().items(), *[("host", h) for h in hosts or []]]
        return redirect(
            reverse("dashboards:service_diagnosis", args=[slug]) + "?" + urlencode(back)
        )
    messages.success(request, f"Bottleneck “{bottleneck.title}” recorded as confirmed.")
    return redirect(f"{svc.get_absolute_url()}#bottleneck-{bottleneck.pk}")
