"""Simple server-rendered pages: a service's latest minutes, and the hosts. The full
dashboards live in the `dashboards` app."""

from __future__ import annotations

from datetime import timedelta

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone

from collectors import selectors
from collectors.models import PUSH_FRESHNESS, Host
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
            "economics": selectors.live_economics(service=service, now=now),
            "minutes": LIVE_MINUTES,
        },
    )


@login_required
def hosts(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "collectors/hosts.html",
        {
            "rows": selectors.host_rows(now=timezone.now()),
            "freshness_minutes": int(PUSH_FRESHNESS.total_seconds() // 60),
            "services_hours": int(selectors.HOST_SERVICES_WINDOW.total_seconds() // 3600),
        },
    )


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
            "quarantine": selectors.host_quarantine(host=host),
        },
    )
