"""Who may edit what: members of a service's team edit its dossier; everyone logged in reads."""

from __future__ import annotations

from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404

from dossiers.models import Service


def service_for_reading(slug: str) -> Service:
    return get_object_or_404(Service.objects.select_related("team"), slug=slug)


def service_for_editing(user, slug: str) -> Service:
    """The service named `slug` if `user` may edit it; 404 if unknown, 403 if not theirs."""
    service = service_for_reading(slug)
    if not service.can_edit(user):
        raise PermissionDenied("Only members of the service's team edit its dossier.")
    return service
