from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "core"
    verbose_name = "Platform (credentials, outbound guard, API behaviour, display)"

    def ready(self) -> None:
        from core import lookups, schema  # noqa: F401  (register `__any`, the OpenAPI extension)
