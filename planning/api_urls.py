"""This app's routes under /api/v1/."""

from django.urls import path

from planning.api import PlanView

urlpatterns = [
    path("services/<slug:slug>/plan/", PlanView.as_view(), name="api-plan"),
]
