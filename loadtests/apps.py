from django.apps import AppConfig


class LoadtestsConfig(AppConfig):
    name = "loadtests"
    verbose_name = "load tests"

    def ready(self) -> None:
        from loadtests import checks, provenance, schema  # noqa: F401  (register the settings check, the dossier's links to runs and the CI token's OpenAPI scheme)
