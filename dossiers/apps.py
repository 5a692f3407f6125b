from django.apps import AppConfig


class DossiersConfig(AppConfig):
    name = "dossiers"
