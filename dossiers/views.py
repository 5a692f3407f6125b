from django.contrib.auth.decorators import login_required
from django.shortcuts import get_object_or_404, render

from dossiers import selectors
from dossiers.models import Service


@login_required
def fleet(request):
    return render(request, "dossiers/fleet.html", {"services": selectors.fleet_services()})


@login_required
def dossier(request, slug: str):
    service = get_object_or_404(Service.objects.select_related("team"), slug=slug)
    return render(request, "dossiers/dossier.html", {"service": service})


@login_required
def baseline(request, slug: str, pk: int):
    service = get_object_or_404(Service, slug=slug)
    return render(
        request,
        "dossiers/baseline.html",
        {"service": service, "baseline": get_object_or_404(service.baselines, pk=pk)},
    )
