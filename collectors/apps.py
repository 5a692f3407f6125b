from django.apps import AppConfig


class CollectorsConfig(AppConfig):
    name = "collectors"

    def ready(self) -> None:
        from collectors import schema  # noqa: F401  (registers the OpenAPI auth extension)
