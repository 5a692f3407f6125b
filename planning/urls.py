"""The planner pages (namespace "planning"), mounted at the site root by perfhub/urls.py."""

from django.urls import path

from planning import views

app_name = "planning"

urlpatterns = [
    path("services/<slug:slug>/planner/", views.planner, name="planner"),
    path("planner/", views.fleet, name="fleet"),
]
