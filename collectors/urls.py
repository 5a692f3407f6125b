from django.urls import path

from collectors import views

app_name = "collectors"
urlpatterns = [
    path("hosts/", views.hosts, name="hosts"),
    path("services/<slug:slug>/", views.service_live, name="service_live"),
]
