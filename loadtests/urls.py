"""Load-test, sweep, gate-run, diagnosis and calculator pages (namespace "loadtests").

Mounted by perfhub/urls.py with `path("", include("loadtests.urls"))`.
"""

from django.urls import path

from loadtests import views

app_name = "loadtests"

S = "services/<slug:slug>/"
urlpatterns = [
    path(S + "loadtests/", views.load_tests, name="list"),
    path(S + "loadtests/upload/", views.upload, name="upload"),
    path(S + "loadtests/<int:pk>/", views.detail, name="detail"),
    path(S + "loadtests/<int:pk>/promote/", views.promote, name="promote"),
    path(S + "loadtests/<int:pk>/sweep/", views.sweep, name="sweep"),
    path(
        S + "loadtests/<int:pk>/compare/<int:before>/",
        views.compare_runs,
        name="compare_runs",
    ),
    path(
        S + "loadtests/<int:pk>/experiment/",
        views.experiment_from_runs,
        name="experiment_from_runs",
    ),
    path(S + "ci-tokens/", views.ci_tokens, name="ci_tokens"),
    path(S + "ci-tokens/<int:pk>/revoke/", views.ci_token_revoke, name="ci_token_revoke"),
    path(S + "gate-runs/", views.gate_runs, name="gate_runs"),
    path(S + "gate-runs/<int:pk>/", views.gate_run, name="gate_run"),
    path(S + "diagnosis/<str:kind>/<int:pk>/", views.diagnosis, name="diagnosis"),
    path(S + "diagnosis/<str:kind>/<int:pk>/confirm/", views.confirm, name="confirm"),
    path("calculators/cost/", views.cost_calculator, name="cost_calculator"),
    path("calculators/kv-cache/", views.kv_cache_calculator, name="kv_cache_calculator"),
]
