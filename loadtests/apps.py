from django.apps import AppConfig


class LoadtestsConfig(AppConfig):
    name = "loadtests"
    verbose_name = "load tests"

    def ready(self) -> None:
        from loadtests import checks, schema  # noqa: F401  (register the settings check and the CI token's OpenAPI scheme)
