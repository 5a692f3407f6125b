from django.urls import path

from collectors import views

app_name = "collectors"
urlpatterns = [
    path("hosts/", views.hosts, name="hosts"),
    path("hosts/<int:pk>/", views.host_detail, name="host_detail"),
    path("prometheus/", views.prometheus_sources, name="prometheus_sources"),
    path("prometheus/new/", views.prometheus_source_edit, name="prometheus_source_create"),
    path("prometheus/<int:pk>/", views.prometheus_source, name="prometheus_source"),
    path("prometheus/<int:pk>/edit/", views.prometheus_source_edit, name="prometheus_source_edit"),
    path("services/<slug:slug>/", views.service_live, name="service_live"),
]
