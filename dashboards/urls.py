from django.urls import path

from dashboards import views

app_name = "dashboards"

S = "services/<slug:slug>/"
urlpatterns = [
    path("", views.fleet, name="fleet"),
    path(S, views.service, name="service"),
    path(S + "panels.json", views.service_panels, name="service_panels"),
    path(S + "live/", views.service_live_fragment, name="service_live_fragment"),
    path(S + "claims/", views.service_claims_fragment, name="service_claims"),
    path(S + "right-now/", views.service_right_now_fragment, name="service_right_now"),
    path(S + "claims/baseline/", views.live_baseline_candidate, name="live_baseline_candidate"),
    path(S + "timeline/", views.service_timeline, name="service_timeline"),
    path(S + "diagnosis/", views.service_diagnosis, name="service_diagnosis"),
    path(
        S + "diagnosis/confirm/", views.service_diagnosis_confirm, name="service_diagnosis_confirm"
    ),
    path(S + "loadtests/compare/", views.loadtest_compare, name="loadtest_compare"),
]
