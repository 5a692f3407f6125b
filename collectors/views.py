"""Simple server-rendered pages: a service's latest minutes, the hosts, Prometheus sources.
The full dashboards live in the `dashboards` app."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone

from collectors import selectors
from collectors.economics import live_economics
from collectors.exposition import promql, recording
from collectors.forms import PrometheusSourceForm
from collectors.hosts import HOST_SERVICES_WINDOW, host_quarantine, host_rows
from collectors.models import PUSH_FRESHNESS, Host, PrometheusSource
from collectors.services import prometheus
from dossiers.models import Service

LIVE_MINUTES = 30


@login_required
def service_live(request: HttpRequest, slug: str) -> HttpResponse:
    service = get_object_or_404(Service, slug=slug)
    now = timezone.now()
    metrics = selectors.service_metrics(
        service=service, start=now - timedelta(minutes=LIVE_MINUTES), end=now, resolution=60
    )
    return render(
        request,
        "collectors/service_live.html",
        {
            "service": service,
            "metrics": metrics,
            "points": list(reversed(metrics.points)),
            "host_rows": selectors.latest_minutes(service=service),
            "economics": live_economics(service=service, now=now),
            "minutes": LIVE_MINUTES,
        },
    )


@login_required
def hosts(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "collectors/hosts.html",
        {
            "rows": host_rows(now=timezone.now()),
            "freshness_minutes": int(PUSH_FRESHNESS.total_seconds() // 60),
            "services_hours": int(HOST_SERVICES_WINDOW.total_seconds() // 3600),
        },
    )


@login_required
def prometheus_sources(request: HttpRequest) -> HttpResponse:
    sources = PrometheusSource.objects.select_related("service").order_by("name")
    return render(request, "collectors/prometheus_sources.html", {"sources": sources})


@login_required
def prometheus_source(request: HttpRequest, pk: int) -> HttpResponse:
    """A source's status, its last error, the PromQL it sends; team members may sync now."""
    source = get_object_or_404(PrometheusSource.objects.select_related("service__team"), pk=pk)
    can_edit = source.service.can_edit(request.user)
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Only members of the service's team sync its sources.")
        outcome = prometheus.source_sync(source_id=source.pk)
        if outcome.ok:
            messages.success(request, f"Synced: {outcome.steps} scrapes read.")
        else:
            messages.error(request, f"Sync failed: {outcome.error}")
        return redirect(source.get_absolute_url())
    aggregated = source.mode == PrometheusSource.Mode.AGGREGATED
    if aggregated:
        queries = {source.engine: recording.recorded_query(source.engine, source.engine_selector)}
    else:
        queries = {source.engine: promql.series_query(source.engine, source.engine_selector)}
    if source.dcgm_selector and not aggregated:
        queries["dcgm"] = promql.series_query("dcgm", source.dcgm_selector)
    return render(
        request,
        "collectors/prometheus_source.html",
        {"source": source, "queries": queries, "can_edit": can_edit, "aggregated": aggregated},
    )


@login_required
def prometheus_source_edit(request: HttpRequest, pk: int | None = None) -> HttpResponse:
    """Create a source for a service of the user's teams, or edit one (team members)."""
    source = None
    if pk is not None:
        source = get_object_or_404(PrometheusSource.objects.select_related("service__team"), pk=pk)
        if not source.service.can_edit(request.user):
            raise PermissionDenied("Only members of the service's team edit its sources.")
    form = PrometheusSourceForm(request.POST or None, instance=source, user=request.user)
    if request.method == "POST" and form.is_valid():
        data = {k: v for k, v in form.cleaned_data.items() if k != "enabled"}
        if source is None:
            try:
                source = prometheus.source_create(**data)
            except ValidationError as exc:  # e.g. a host of that name exists already
                form.add_error(None, exc)
        else:
            form.save()
            prometheus.source_update(source=source, changed=form.changed_data)
        if not form.errors:
            messages.success(request, f"Saved {source.name}; the next sync reads it.")
            return redirect(source.get_absolute_url())
    title = f"Edit {source.name}" if source else "New Prometheus source"
    return render(request, "collectors/prometheus_source_form.html", {"form": form, "title": title})


@login_required
def host_detail(request: HttpRequest, pk: int) -> HttpResponse:
    host = get_object_or_404(Host.objects.select_related("pull_service"), pk=pk)
    now = timezone.now()
    health = host.health(now)
    return render(
        request,
        "collectors/host_detail.html",
        {
            "host": host,
            "health": health.value,
            "health_label": health.label,
            "health_detail": host.health_detail(now),
            "quarantine": host_quarantine(host=host),
        },
    )
