from django.urls import path

from dossiers import views

app_name = "dossiers"
urlpatterns = [
    path("", views.fleet, name="fleet"),
    path("services/<slug:slug>/", views.dossier, name="dossier"),
    path("services/<slug:slug>/baselines/<int:pk>/", views.baseline, name="baseline"),
]
