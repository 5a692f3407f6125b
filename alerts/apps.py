from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "alerts"
