from django.apps import AppConfig


class CollectorsConfig(AppConfig):
    name = "collectors"

    def ready(self) -> None:
        from collectors import schema, signals  # noqa: F401  (OpenAPI auth extension; locks)
        from collectors.exposition import engines
        from dossiers.models import use_engine_labels

        # A service's engine choices are the registered engines (read when asked, so an engine
        # registered later shows up too).
        use_engine_labels(lambda: {e.name: e.label for e in engines.ENGINES.values()})
