from django.apps import AppConfig


class LoadtestsConfig(AppConfig):
    name = "loadtests"
    verbose_name = "load tests"

    def ready(self) -> None:
        from loadtests import schema  # noqa: F401  (registers the CI token's OpenAPI scheme)
