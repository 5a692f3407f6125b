"""This app's routes under /api/v1/."""

from django.urls import path

from collectors import api_views

urlpatterns = [
    path("ingest/", api_views.IngestView.as_view(), name="collectors-ingest"),
    path(
        "services/<slug:slug>/metrics/",
        api_views.ServiceMetricsView.as_view(),
        name="collectors-service-metrics",
    ),
]
