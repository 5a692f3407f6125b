from django.urls import path

from dossiers import views

app_name = "dossiers"

S = "services/<slug:slug>/"
urlpatterns = [
    path("new-service/", views.service_create, name="service_create"),
    path(S, views.dossier, name="dossier"),
    path(S + "onboarding/", views.onboarding, name="onboarding"),
    path(S + "edit/", views.service_edit, name="service_edit"),
    path(S + "narrative/edit/", views.narrative_edit, name="narrative_edit"),
    path(S + "narrative/history/", views.revisions, name="revisions"),
    path(S + "baselines/new/", views.baseline_edit, name="baseline_create"),
    path(S + "baselines/<int:pk>/", views.baseline, name="baseline"),
    path(S + "baselines/<int:pk>/edit/", views.baseline_edit, name="baseline_edit"),
    path(S + "baselines/<int:pk>/promote/", views.baseline_promote, name="baseline_promote"),
    path(S + "bottlenecks/new/", views.bottleneck_edit, name="bottleneck_create"),
    path(S + "bottlenecks/<int:pk>/edit/", views.bottleneck_edit, name="bottleneck_edit"),
    path(S + "experiments/new/", views.experiment_edit, name="experiment_create"),
    path(S + "experiments/<int:pk>/edit/", views.experiment_edit, name="experiment_edit"),
    path(S + "slos/new/", views.slo_edit, name="slo_create"),
    path(S + "slos/<int:pk>/edit/", views.slo_edit, name="slo_edit"),
    path(S + "slos/<int:pk>/delete/", views.slo_delete, name="slo_delete"),
    path(S + "configs/", views.config_versions, name="configs"),
    path(S + "configs/new/", views.config_create, name="config_create"),
    path(S + "export.md", views.export_markdown, name="export_markdown"),
    path(S + "import/", views.import_markdown, name="import_markdown"),
]
