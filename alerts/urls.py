from django.urls import path

from alerts import views

app_name = "alerts"
urlpatterns = [
    path("", views.alert_list, name="alert_list"),
    path("<int:pk>/", views.alert_detail, name="alert_detail"),
    path("rules/", views.rule_list, name="rule_list"),
    path("rules/new/<slug:slug>/", views.rule_edit, name="rule_create"),
    path("rules/<int:pk>/edit/", views.rule_edit, name="rule_edit"),
    path("rules/prometheus/<slug:slug>/", views.prometheus_rules, name="prometheus_rules"),
    path("rules/defaults/<slug:slug>/", views.rule_defaults, name="rule_defaults"),
    path("silences/", views.silence_list, name="silence_list"),
    path("silences/<int:pk>/expire/", views.silence_expire, name="silence_expire"),
    path("receivers/", views.receiver_list, name="receiver_list"),
    path("receivers/new/", views.receiver_edit, name="receiver_create"),
    path("receivers/<int:pk>/edit/", views.receiver_edit, name="receiver_edit"),
    path("service/<slug:slug>/fragment/", views.service_fragment, name="service_fragment"),
]
