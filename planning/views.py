"""The planner pages: one service's plan (editable load, growth, headroom, SLO), and the fleet.

Thin: the form's fields go to `planning.plan.plan_for`; a bad field re-renders the page with a
message naming it (400), never a traceback.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dossiers.models import Service
from dossiers.permissions import service_for_reading
from loadtests.charts import to_json_script
from planning import charts
from planning.inputs import PlanInputError, plan_inputs
from planning.plan import (
    PlanError,
    alternatives,
    cheapest_caveat,
    headroom,
    plan_for,
)


@login_required
def planner(request: HttpRequest, slug: str) -> HttpResponse:
    service = service_for_reading(slug)
    context = {"service": service, "form": request.GET}
    try:
        options = plan_inputs(request.GET)
        plan = plan_for(service, **options)
    except (PlanInputError, PlanError) as exc:
        context["error"] = str(exc)
        return render(request, "planning/planner.html", context, status=400 if request.GET else 200)
    rows = alternatives(plan)
    context.update(
        plan=plan,
        options=options,
        plan_dict=plan.to_dict(),
        alternatives=rows,
        cheapest_reverted=cheapest_caveat(rows),
        plan_reverted_by=plan.reverted_by,
        chart_json=to_json_script(charts.plan_figure(plan), "planner-chart-data"),
    )
    return render(request, "planning/planner.html", context)


# Each plan fits a sweep's curves (~35 ms): a page of plans, not the whole fleet at once.
PLANS_PER_PAGE = 50


@login_required
def fleet(request: HttpRequest) -> HttpResponse:
    services = Service.objects.select_related("team").order_by("name")
    page = Paginator(services, PLANS_PER_PAGE).get_page(request.GET.get("page"))
    rows = []
    for service in page:
        try:
            rows.append((service, plan_for(service), ""))
        except PlanError as exc:
            rows.append((service, None, str(exc)))
    context = {"rows": rows, "headroom": headroom(), "page": page}
    return render(request, "planning/fleet.html", context)
