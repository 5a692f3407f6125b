from django.urls import path

from collectors import views

app_name = "collectors"
urlpatterns = [
    path("hosts/", views.hosts, name="hosts"),
    path("hosts/<int:pk>/", views.host_detail, name="host_detail"),
    path("services/<slug:slug>/", views.service_live, name="service_live"),
]
