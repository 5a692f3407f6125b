from django.apps import AppConfig


class DossiersConfig(AppConfig):
    name = "dossiers"

    def ready(self) -> None:
        from dossiers import checks  # noqa: F401  (register the deploy check)
