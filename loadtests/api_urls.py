"""This app's routes under /api/v1/."""

from django.urls import path

from loadtests import api as loadtest_api
from loadtests.experiments_api import ExperimentFromRunsView

urlpatterns: list = [
    path(
        "services/<slug:slug>/loadtests/",
        loadtest_api.LoadTestImportView.as_view(),
        name="api-loadtests",
    ),
    path("services/<slug:slug>/gate/", loadtest_api.GateView.as_view(), name="api-gate"),
    path(
        "services/<slug:slug>/experiments/",
        ExperimentFromRunsView.as_view(),
        name="api-experiments",
    ),
]
